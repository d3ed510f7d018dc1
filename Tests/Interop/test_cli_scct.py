"""The whole SCCT model from the command line, end to end over 127.0.0.1.

`serve` publishes messages, XML, files, images and 2D arrays (from its options, periodically with
--every, and from a control input: standard input or a FIFO of JSON lines); `subscribe` and `record`
receive them, and send every kind back (--send-*), which `serve` prints and keeps in its --inbox.
`record --reconnect` survives a publisher restart, the outage recorded as a gap. Every content is
checked against what was sent (bytes, MD5, array values read back with numpy).
"""
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import numpy as np

from tool_process import TIMEOUT, TRIBUTARY, Serve

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


class Server(Serve):
    """A `tributary serve` process (API key "k"), standard input closed unless given."""

    def __init__(self, *args, bind="tcp://127.0.0.1:0", stdin=subprocess.DEVNULL):
        super().__init__(*args, bind=bind, stdin=stdin)

    def wait_started(self, count=1, timeout=TIMEOUT):
        """Until `count` subscribers are started (asked with SIGUSR1: control lines go to started ones)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.process.send_signal(signal.SIGUSR1)
            self.wait_for("subscribers: ")
            listed = int(self.seen[-1].split()[1])
            started = sum(": started," in self.wait_for("  session") for _ in range(listed))
            if started >= count:
                return
            time.sleep(0.1)
        raise AssertionError(f"{count} subscribers did not start; saw {self.seen}")

    def stop(self):
        """SIGINT (a clean stop), then kill if it hangs; returns its stderr."""
        return super().stop(signal.SIGINT, kill_if_hung=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def md5(data):
    return hashlib.md5(data).hexdigest()


class SCCTFromTheCommandLine(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="tributary-scct-")
        self.servers = []
        self.processes = []
        # What is sent: a binary file, a PNG, an XML file, arrays of two dtypes.
        self.blob = os.urandom(300_000) + b"\x00end"   # more than one 256 KiB chunk from a subscriber
        self.write("data.bin", self.blob)
        self.write("pixel.png", PNG)
        self.write("doc.xml", b'<doc kind="file">\xc3\xa9t\xc3\xa9</doc>')
        self.doubles = np.array([[0.5, -1.25, 3.0], [1e-3, 2.5e6, -0.0]])
        np.save(self.path("doubles.npy"), self.doubles)
        self.counts = np.array([[1, -2], [300, -32768]], dtype=np.int16)
        np.save(self.path("counts.npy"), self.counts)

    def tearDown(self):
        for p in self.processes:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=TIMEOUT)
            for stream in (p.stdout, p.stderr, p.stdin):
                if stream:
                    stream.close()
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.directory, name)

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)

    def serve(self, *args, **kwargs):
        server = Server(*args, **kwargs)
        self.servers.append(server)
        return server

    def run_tool(self, *args, timeout=TIMEOUT):
        return subprocess.run([TRIBUTARY, *args], capture_output=True, text=True, timeout=timeout)

    def subscribe_json(self, address, *args, duration=2.5):
        result = self.run_tool("subscribe", address, "--api-key", "k", "--json", "--duration", str(duration), *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return [json.loads(line) for line in result.stdout.splitlines()], result.stderr

    def assert_every_kind(self, packages, every_file_checked=True):
        """The packages of setUp's files, as `subscribe --json` prints them."""
        by_kind = {}
        for p in packages:
            by_kind.setdefault(p["kind"], []).append(p)
        self.assertIn({"code": 0, "text": "héllo, subscribers"}, [m["content"] for m in by_kind["message"]])
        xmls = [x["content"]["xml"] for x in by_kind["xml"]]
        self.assertIn('<inline a="1"/>', xmls)
        self.assertIn('<doc kind="file">été</doc>', xmls)
        files = {f["content"]["name"]: f["content"] for f in by_kind["file"]}
        self.assertEqual(files["data.bin"]["size"], len(self.blob))
        self.assertEqual(files["data.bin"]["md5"], md5(self.blob))
        images = {f["content"]["name"]: f["content"] for f in by_kind["image"]}
        self.assertEqual(images["pixel.png"]["format"], "png")
        self.assertEqual(images["pixel.png"]["md5"], md5(PNG))
        arrays = {a["content"]["element_type"]: a["content"] for a in by_kind["array"]}
        np.testing.assert_array_equal(np.array(arrays["double"]["elements"]), self.doubles)
        self.assertEqual(np.signbit(np.array(arrays["double"]["elements"])[1, 2]), True)  # -0.0 kept
        np.testing.assert_array_equal(np.array(arrays["int32"]["elements"]), self.counts.astype(np.int32))
        for p in packages:
            if p["kind"] in ("message", "xml", "file", "image", "array"):
                self.assertEqual(p["source_id"], 0)
        return by_kind

    # -- publisher -> subscriber -------------------------------------------------------------------

    def test_serve_publishes_every_kind_to_each_subscriber_as_it_starts(self):
        server = self.serve("--message", "héllo, subscribers", "--xml", '<inline a="1"/>', "--xml", self.path("doc.xml"),
                            "--file", self.path("data.bin"), "--image", self.path("pixel.png"),
                            "--array", "double:" + self.path("doubles.npy"), "--array", "int32:" + self.path("counts.npy"))
        sessions = set()
        for _ in range(2):  # each subscriber gets them once, when it starts
            packages, _ = self.subscribe_json(server.address, duration=1.5)
            by_kind = self.assert_every_kind(packages)
            self.assertEqual(len(by_kind["message"]), 1)
            self.assertEqual(len(by_kind["array"]), 2)
            sessions.add(server.wait_for("sent 7 of 7 packages to session").split()[-1])
        self.assertEqual(len(sessions), 2)

    def test_every_repeats_the_packages(self):
        server = self.serve("--simulate", "id=1,rate=1000,channels=1,block=100", "--message", "tick", "--every", "0.3")
        packages, _ = self.subscribe_json(server.address, "--sources", "1", duration=2)
        ticks = [p for p in packages if p["kind"] == "message"]
        # One at the start, then one every 0.3 s (checked every 0.2 s, so every 0.4 s at worst): 3 or more in the
        # 2 s the subscriber runs, even if its start takes half a second.
        self.assertGreaterEqual(len(ticks), 3, ticks)
        self.assertLessEqual(len(ticks), 9, ticks)
        self.assertTrue(all(t["content"]["text"] == "tick" for t in ticks))
        self.assertTrue(any(p["kind"] == "analog" for p in packages))

    def test_usage_errors_of_the_package_options(self):
        for args, expected in [
            (["--array", "complex:" + self.path("doubles.npy")], "is not TYPE:FILE.npy"),
            (["--array", "int16:" + self.path("doubles.npy")], "is not an integer"),
            (["--file", self.path("missing.bin")], "does not exist"),
            (["--image", self.path("data.bin")], "png, jpeg, bmp or tiff"),
            (["--every", "1"], "--every needs packages"),
            (["--control", self.path("missing.fifo")], "option --control"),
        ]:
            result = self.run_tool("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", *args)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            self.assertIn(expected, result.stderr)
        result = self.run_tool("subscribe", "127.0.0.1:1", "--api-key", "k", "--send-array", "bool")
        self.assertEqual(result.returncode, 2)
        self.assertIn("option --send-array", result.stderr)

    def test_control_on_standard_input(self):
        server = self.serve("--control", "-", stdin=subprocess.PIPE)
        subscriber = subprocess.Popen([TRIBUTARY, "subscribe", server.address, "--api-key", "k", "--json", "--duration", "4"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.processes.append(subscriber)
        server.wait_for("subscriber + session")
        server.wait_started()
        lines = [
            {"kind": "message", "text": "héllo, subscribers", "code": 0},
            {"kind": "xml", "text": '<inline a="1"/>'},
            "this is not JSON",
            {"kind": "xml", "file": self.path("doc.xml")},
            {"kind": "file", "path": self.path("data.bin")},
            {"kind": "image", "path": self.path("pixel.png")},
            {"kind": "array", "type": "double", "npy": self.path("doubles.npy")},
            {"kind": "array", "type": "int32", "values": self.counts.tolist()},
            {"kind": "array", "type": "string", "values": [["a", "b"], ["ç", ""]]},
            {"kind": "message", "text": "x", "colour": "red"},
            {"kind": "message", "text": "coded", "code": 42},
        ]
        for line in lines:
            server.process.stdin.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
            server.process.stdin.flush()
        server.wait_for("control line 11: published")
        out, err = subscriber.communicate(timeout=TIMEOUT)
        self.assertEqual(subscriber.returncode, 0, err)
        packages = [json.loads(row) for row in out.splitlines()]
        by_kind = self.assert_every_kind(packages)
        strings = [a["content"] for a in by_kind["array"] if a["content"]["element_type"] == "string"][0]
        self.assertEqual(strings["elements"], [["a", "b"], ["ç", ""]])
        self.assertIn({"code": 42, "text": "coded"}, [m["content"] for m in by_kind["message"]])
        stderr = server.stop()
        self.assertIn("line 3: not a JSON object", stderr)
        self.assertIn('line 10: "colour" is not a key of a message line', stderr)

    def test_control_on_a_fifo_takes_one_writer_after_another(self):
        fifo = self.path("control.fifo")
        os.mkfifo(fifo)
        server = self.serve("--control", fifo)
        subscriber = subprocess.Popen([TRIBUTARY, "subscribe", server.address, "--api-key", "k", "--json", "--duration", "3"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.processes.append(subscriber)
        server.wait_for("subscriber + session")
        server.wait_started()
        for text in ("first writer", "second writer"):
            with open(fifo, "w") as f:   # opens when serve reads; closing ends this writer
                f.write(json.dumps({"kind": "message", "text": text}) + "\n")
            server.wait_for("control line")
        out, err = subscriber.communicate(timeout=TIMEOUT)
        texts = [json.loads(line)["content"]["text"] for line in out.splitlines() if json.loads(line)["kind"] == "message"]
        self.assertEqual(texts, ["first writer", "second writer"], err)

    # -- subscriber -> publisher -------------------------------------------------------------------

    def send_options(self):
        return ["--send-message", "héllo, publisher", "--send-xml", '<inline a="1"/>', "--send-xml", self.path("doc.xml"),
                "--send-file", self.path("data.bin"), "--send-image", self.path("pixel.png"),
                "--send-array", "double:" + self.path("doubles.npy"), "--send-array", "int32:" + self.path("counts.npy")]

    def assert_inbox(self, inbox, sessions):
        """Each session's packages in inbox/packages.jsonl, the files stored under sanitised names."""
        with open(os.path.join(inbox, "packages.jsonl")) as f:
            records = [json.loads(line) for line in f]
        self.assertEqual(sorted({r["session"] for r in records}), sorted(sessions))
        for session in sessions:
            mine = [r for r in records if r["session"] == session]
            kinds = sorted(r["kind"] for r in mine)
            self.assertEqual(kinds, ["array", "array", "file", "image", "message", "xml", "xml"])
            self.assertIn({"code": 0, "text": "héllo, publisher"}, [r["content"] for r in mine if r["kind"] == "message"])
            arrays = {r["content"]["element_type"]: r["content"]["elements"] for r in mine if r["kind"] == "array"}
            np.testing.assert_array_equal(np.array(arrays["double"]), self.doubles)
            np.testing.assert_array_equal(np.array(arrays["int32"]), self.counts)
            for r in mine:
                if r["kind"] in ("file", "image"):
                    with open(r["stored_as"], "rb") as f:
                        content = f.read()
                    self.assertEqual(md5(content), r["content"]["md5"])
                    self.assertEqual(os.path.dirname(r["stored_as"]), inbox)
        stored = sorted(os.listdir(inbox))
        return records, stored

    def test_subscribe_and_record_send_every_kind_to_the_publisher(self):
        inbox = self.path("inbox")
        server = self.serve("--inbox", inbox, "--simulate", "id=1,rate=1000,channels=1,block=100")
        result = self.run_tool("subscribe", server.address, "--api-key", "k", "--duration", "1.5", *self.send_options())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("sent file 'data.bin' (300004 bytes)", result.stderr)
        result = self.run_tool("record", server.address, "--api-key", "k", "--duration", "1.5", "--out", self.path("r.tcap"),
                               *self.send_options())
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [server.wait_for("from session") for _ in range(14)]
        sessions = sorted({int(line.split()[2].rstrip(":")) for line in lines})
        self.assertEqual(len(sessions), 2)
        records, stored = self.assert_inbox(inbox, sessions)
        # The second data.bin did not overwrite the first.
        self.assertEqual(stored, ["data-1.bin", "data.bin", "packages.jsonl", "pixel-1.png", "pixel.png"])
        for name in ("data.bin", "data-1.bin"):
            with open(os.path.join(inbox, name), "rb") as f:
                self.assertEqual(f.read(), self.blob)
        self.assertTrue(any("message" in line and "héllo, publisher" in line for line in lines))

    def test_a_sent_file_is_stored_in_the_inbox_under_its_base_name(self):
        """--send-file sends the base name of its path (a peer's hostile names are refused by the
        library's sanitiser, tested in Swift): the inbox holds it, nothing is written outside."""
        inbox = self.path("inbox")
        server = self.serve("--inbox", inbox)
        os.makedirs(self.path("sub"))
        self.write("sub/escape.bin", b"payload")
        result = self.run_tool("subscribe", server.address, "--api-key", "k", "--duration", "1",
                               "--send-file", self.path("sub/escape.bin"))
        self.assertEqual(result.returncode, 0, result.stderr)
        line = server.wait_for("from session")
        self.assertIn("-> " + os.path.join(inbox, "escape.bin"), line)
        self.assertEqual(sorted(os.listdir(inbox)), ["escape.bin", "packages.jsonl"])
        self.assertFalse(os.path.exists(self.path("escape.bin")))

    # -- reconnection -------------------------------------------------------------------------------

    def test_record_and_subscribe_survive_a_publisher_restart_with_the_outage_as_a_gap(self):
        port = free_port()
        device = "id=1,name=DAQ,rate=1000,channels=2,block=100,freq=10"
        first = self.serve("--simulate", device, bind=f"tcp://127.0.0.1:{port}")
        capture = self.path("long.tcap")
        record = subprocess.Popen([TRIBUTARY, "record", f"127.0.0.1:{port}", "--api-key", "k", "--reconnect", "--duration", "6",
                                   "--out", capture], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        subscribe = subprocess.Popen([TRIBUTARY, "subscribe", f"127.0.0.1:{port}", "--api-key", "k", "--reconnect", "--json",
                                      "--duration", "6", "--channels", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.processes += [record, subscribe]
        first.wait_for("subscriber + session")
        first.wait_for("subscriber + session")
        time.sleep(1.5)
        first.process.send_signal(signal.SIGTERM)
        first.process.wait(timeout=TIMEOUT)
        time.sleep(1.0)
        second = self.serve("--simulate", device, bind=f"tcp://127.0.0.1:{port}")
        second.wait_for("subscriber + session")
        second.wait_for("subscriber + session")
        out, err = record.communicate(timeout=TIMEOUT)
        self.assertEqual(record.returncode, 0, err)
        # A publisher stopped by SIGTERM closes its sessions normally: said as such (issue 43 item 7), not as error 5.
        self.assertIn("the publisher closed the session: terminated (SIGTERM); reconnecting", err)
        self.assertNotIn("error 5", err)
        self.assertIn("reconnected to 'tributary serve' (session", err)
        self.assertRegex(err, r"source 1 resumed: a gap of \d+ frames recorded for the outage")
        info = json.loads(self.run_tool("inspect", capture, "--json").stdout)
        gaps = [g for g in info["gaps"] if g["source_id"] == 1]
        self.assertEqual(len(gaps), 1, info["gaps"])
        self.assertEqual(gaps[0]["cause"], "sequence jump")
        # 1 s without a publisher, its restart, and the reconnection's back-off (0.2 s doubling, at most 2 s):
        # 1.2 to about 4 s of 100 ms frames.
        self.assertGreaterEqual(gaps[0]["missing_count"], 9)
        self.assertLessEqual(gaps[0]["missing_count"], 60)
        source = [s for s in info["sources"] if s["id"] == 1][0]
        # Frames from both sessions are in the one capture: 1.5 s before the outage, the rest after it.
        self.assertGreater(source["samples"], 2000)
        self.assertEqual(len(info["sources"]), 1 + sum(1 for s in info["sources"] if s["id"] == 0))
        text = self.run_tool("inspect", capture).stdout
        self.assertIn("sequence jump", text)
        # The subscriber printed the end of the session (the publisher's close, code 0: issue 43 item 7)
        # and went on with the same filter id.
        out, err = subscribe.communicate(timeout=TIMEOUT)
        self.assertEqual(subscribe.returncode, 0, err)
        packages = [json.loads(line) for line in out.splitlines()]
        losses = [i for i, p in enumerate(packages) if p["kind"] == "close"]
        self.assertTrue(losses, "no close line for the ended session")
        self.assertEqual(packages[losses[0]]["content"], {"code": 0, "reason": "terminated (SIGTERM)"})
        after = [p for p in packages[losses[0]:] if p["kind"] == "analog"]
        self.assertGreater(len(after), 10)
        self.assertTrue(all(p["filter_id"] == 1 and p["content"]["channel_indexes"] == [0] for p in after))


if __name__ == "__main__":
    unittest.main()
