"""The package kinds are declared once (TributaryWire's FrameKind and ExtensionKind, issue 39): the
library lists them with their traits (tributary_kinds_json), and the Python constants, the capture
kinds, the C header and the command line's package options and control lines are checked against that
list here, so that a kind one of them misses fails a test.

TRIBUTARY names the tool and TRIBUTARY_LIBRARY the library, as for the other tests of this directory.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import tributary
from tributary import _native, capture

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "Tests", "Interop"))
import tool_process as tp  # noqa: E402 (the interop tests' helpers: the tool run to its end, a serve process)


def read(relative: str) -> str:
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def constant_name(kind: str) -> str:
    """The C macro / Python constant suffix of a kind name: "analog-filter" → "ANALOG_FILTER"."""
    return kind.upper().replace("-", "_")


class VocabularyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kinds = _native.kind_traits()
        cls.delivered = {k["name"]: k["number"] for k in cls.kinds if k["delivered"]}
        cls.application = [k["name"] for k in cls.kinds if k["application"]]

    def test_the_list_is_the_named_vocabulary(self):
        self.assertEqual({k["name"]: k["number"] for k in self.kinds}, _native.kinds())
        numbers = [k["number"] for k in self.kinds]
        self.assertEqual(numbers, sorted(set(numbers)))
        for kind in self.kinds:
            with self.subTest(kind["name"]):
                self.assertEqual(set(kind), {"number", "name", "sender", "data", "application", "delivered"})
                self.assertIn(kind["sender"], ("publisher", "subscriber", "either"))
                # The traits nest: application packages are data, data is delivered and goes either way.
                if kind["application"]:
                    self.assertTrue(kind["data"])
                if kind["data"]:
                    self.assertTrue(kind["delivered"])
                    self.assertEqual(kind["sender"], "either")
        self.assertEqual(self.delivered["analog"], 3)
        self.assertIn("message", self.application)
        status = _native.lib().tributary_kinds_json(None)
        self.assertEqual(status, _native.E_ARGUMENT)
        self.assertIn("json is NULL", _native.lib().tributary_last_error().decode())

    def test_the_python_constants_are_the_delivered_kinds(self):
        constants = {name[len("KIND_"):]: value for name, value in vars(_native).items() if name.startswith("KIND_")}
        self.assertEqual(constants, {constant_name(name): number for name, number in self.delivered.items()},
                         "_native.KIND_* differ from the library's delivered kinds")
        # What Capture.packages(kinds=…) selects: the delivered kinds whose bit fits the 32-bit mask,
        # but close (it ends a session and is never recorded).
        self.assertEqual(capture._KINDS, {name: number for name, number in self.delivered.items()
                                          if number < 32 and name != "close"})

    def test_the_header_names_the_delivered_kinds(self):
        header = dict(re.findall(r"^#define TRIBUTARY_KIND_(\w+)\s+(\d+)\b", read("include/tributary.h"), re.M))
        self.assertEqual({name: int(value) for name, value in header.items()},
                         {constant_name(name): number for name, number in self.delivered.items()},
                         "include/tributary.h's TRIBUTARY_KIND_* differ from the library's delivered kinds")

    def test_every_application_kind_has_its_options_documented(self):
        self.assertTrue(self.application)
        serve = tp.tool("help", "serve").stdout
        send = {command: tp.tool("help", command).stdout for command in ("subscribe", "record")}
        cli_md = read("docs/CLI.md")
        for name in self.application:
            with self.subTest(name):
                self.assertRegex(serve, rf"\n\s+--{name} ", f"help serve has no --{name}")
                self.assertIn(f'{{"kind":"{name}"', serve, f"help serve shows no {name} control line")
                for command, text in send.items():
                    self.assertRegex(text, rf"\n\s+--send-{name} ", f"help {command} has no --send-{name}")
                self.assertTrue(f"--{name}" in cli_md, f"docs/CLI.md has no --{name}")
                self.assertTrue(f"--send-{name}" in cli_md, f"docs/CLI.md has no --send-{name}")

    def test_control_lines_take_exactly_the_application_kinds(self):
        # One line per declared kind with a key no kind has: an application kind's line is refused for
        # that key, any other kind's for its kind.
        server = tp.Serve("--control", "-", stdin=subprocess.PIPE)
        try:
            for kind in self.kinds:
                server.process.stdin.write(json.dumps({"kind": kind["name"], "no-such-key": 1}) + "\n")
            server.process.stdin.write(json.dumps({"kind": "message", "text": "last"}) + "\n")
            server.process.stdin.flush()
            server.wait_for(f"control line {len(self.kinds) + 1}: published")
        finally:
            errors = server.stop()
        for number, kind in enumerate(self.kinds, start=1):
            with self.subTest(kind["name"]):
                line = re.search(rf"line {number}: (.*)", errors)
                self.assertIsNotNone(line, f"no error for line {number} ({kind['name']}): {errors}")
                if kind["application"]:
                    self.assertIn(f'"no-such-key" is not a key of a {kind["name"]} line', line.group(1))
                else:
                    self.assertIn(f"\"kind\" '{kind['name']}' is not", line.group(1))

    def test_every_capture_kind_is_read_and_described(self):
        # A capture with one frame of every kind Capture.packages selects: each comes back as its
        # kind, described (the objects of `tributary inspect --json`).
        import hashlib

        import capture_spec as cs
        import wire_spec as ws

        content = b"abc"
        md5 = hashlib.md5(content).digest()
        payloads = {
            "configuration": ws.configuration("dev", "sim", [(0, 0, 1000.0, -1.0, 1.0, "ai0", "V")], []),
            "error": ws.error(5, "lost connection"),
            "digital": ws.digital([0], [[1, 0, 1]]),
            "message": ws.message(3, "hello"),
            "xml": ws.xml("<a/>"),
            "file": ws.blob(1, 3, 0, 0, 1, md5, 0, content, "f.bin", []),
            "image": ws.blob(2, 3, 0, 0, 1, md5, 1, content, "p.png", []),
            "array": ws.numeric_array(1, "d", [[1.0, 2.0]]),
            "gap": ws.gap(4, 2),
        }
        self.assertEqual(set(payloads), set(capture._KINDS) - {"analog"},
                         "a kind Capture.packages selects has no frame in this test (or the other way round)")
        frames = [ws.frame(name, payload, sequence=n, source_id=1) for n, (name, payload) in enumerate(payloads.items())]
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "kinds.tcap")
            with open(path, "wb") as f:
                f.write(cs.capture([frames]))
            with tributary.open(path) as cap:
                self.assertEqual([p.kind for p in cap.packages()], list(payloads))
                for name in payloads:
                    with self.subTest(name):
                        packages = list(cap.packages(kinds=[name]))
                        self.assertEqual([p.kind for p in packages], [name])
                        self.assertIsInstance(packages[0].content, dict)
                        self.assertTrue(packages[0].content, f"{name}: no content described")


if __name__ == "__main__":
    unittest.main()
