"""Issue 8, data safety: `record`, `import`, `repair` and `export` as real processes never destroy data
that was safe before they ran, and never hide damage.

Each test is a case an auditor reproduced: a crashed recording's .partial truncated by a new `record`,
a good capture deleted by `record --force` with a wrong API key, `--force --out DIR` failing only after
the whole duration, outputs overwritten silently, damaged or truncated captures exported with exit 0,
duplicated records exported twice, `repair` trusting a footer over the file, and imports of more
channels than a capture holds. Every process has a timeout.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_transport_cli import DEVICE_1, Server  # noqa: E402
from tool_process import TRIBUTARY, ScratchTest  # noqa: E402

TIMEOUT = 30  # seconds any one command may take
DAMAGED = 3   # export's exit status for a damaged capture (ExportCommand.damagedStatus)


def run(*args, timeout=TIMEOUT):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def ok(*args):
    result = run(*args)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr}")
    return result


# Runs argv[1:] and prints [exit status, peak resident bytes] of it alone (see `measured`).
_PEAK_WRAPPER = """
import json, os, sys
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024]))
"""


def measured(*args, timeout=TIMEOUT):
    """(exit status, stderr, seconds, peak resident bytes) of one run, the peak from wait4's rusage.

    The tool is started by a small Python process, not by this one: a child's peak resident size
    starts at its parent's (Linux carries the parent's high-water mark through fork or vfork and
    exec), and this test process grows over the suite (213 MB once, above the bound checked)."""
    with tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        argv = [TRIBUTARY, *map(str, args)]
        try:
            done = subprocess.run([sys.executable, "-c", _PEAK_WRAPPER, *argv], stdout=subprocess.PIPE, stderr=err, text=True,
                                  timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"tributary {' '.join(argv[1:])} took more than {timeout} s") from None
        seconds = time.monotonic() - started
        status, peak = json.loads(done.stdout)
        err.seek(0)
        return status, err.read(), seconds, peak


def records(data):
    """(offset, type, record length) of every record, walking the envelopes from the header."""
    out, offset = [], struct.unpack_from("<I", data, 12)[0]
    while offset + 88 <= len(data) and data[offset:offset + 8] == b"\x9eTREC\r\n\x1a":
        kind, stored = data[offset + 8], struct.unpack_from("<I", data, offset + 64)[0]
        length = 88 + (stored + 7) // 8 * 8
        out.append((offset, kind, length))
        offset += length
    return out


class Files(ScratchTest, unittest.TestCase):
    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)

    def capture(self, name="good.tcap", channels=3, samples=300_000):
        """An imported capture of several chunks, and its samples."""
        a = np.round(np.random.default_rng(5).normal(size=(channels, samples)) * 1000) / 1024
        np.save(self.path("in.npy"), a)
        ok("import", self.path("in.npy"), "--rate", 1000, "--out", self.path(name))
        return a


class RecordTests(Files):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--simulate", DEVICE_1)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_an_existing_partial_is_refused_before_connecting_and_kept(self):
        crashed = os.urandom(1 << 20)
        self.write("x.tcap.partial", crashed)
        started = time.monotonic()
        result = run("record", self.server.address, "--api-key", "k", "--out", self.path("x.tcap"), "--duration", 20)
        self.assertLess(time.monotonic() - started, 10)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"tributary repair {self.path('x.tcap.partial')}", result.stderr)
        self.assertEqual(self.read("x.tcap.partial"), crashed)
        self.assertFalse(os.path.exists(self.path("x.tcap")))
        # --force replaces a capture, never a crashed recording.
        result = run("record", self.server.address, "--api-key", "k", "--out", self.path("x.tcap"), "--duration", 20, "--force")
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(self.read("x.tcap.partial"), crashed)

    def test_force_with_a_wrong_api_key_leaves_the_old_capture(self):
        self.capture()
        good = self.read("good.tcap")
        result = run("record", self.server.address, "--api-key", "wrong", "--out", self.path("good.tcap"), "--force", "--duration", 1)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(self.read("good.tcap"), good)
        self.assertEqual(sorted(os.listdir(self.directory)), ["good.tcap", "in.npy"])

    def test_force_into_a_directory_fails_before_connecting(self):
        os.mkdir(self.path("dir"))
        started = time.monotonic()
        result = run("record", self.server.address, "--api-key", "k", "--out", self.path("dir"), "--force", "--duration", 20)
        self.assertLess(time.monotonic() - started, 10)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("is a directory", result.stderr)
        self.assertEqual(os.listdir(self.path("dir")), [])

    def test_an_existing_capture_needs_force_and_is_replaced_by_a_complete_recording(self):
        self.capture()
        good = self.read("good.tcap")
        result = run("record", self.server.address, "--api-key", "k", "--out", self.path("good.tcap"), "--duration", 1)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--force", result.stderr)
        self.assertEqual(self.read("good.tcap"), good)
        ok("record", self.server.address, "--api-key", "k", "--out", self.path("good.tcap"), "--duration", 1, "--force")
        self.assertNotEqual(self.read("good.tcap"), good)
        self.assertFalse(os.path.exists(self.path("good.tcap.partial")))
        ok("export", self.path("good.tcap"), "--format", "npy", "--out", self.path("new.npy"))

    def test_a_recording_without_data_does_not_replace_the_old_capture(self):
        self.capture()
        good = self.read("good.tcap")
        # Source 99 does not exist: the session runs, but no data arrives.
        result = run("record", self.server.address, "--api-key", "k", "--out", self.path("good.tcap"), "--force",
                     "--duration", 1, "--sources", 99)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("left untouched: no data was received", result.stderr)
        self.assertEqual(self.read("good.tcap"), good)

    def test_a_recording_that_ends_with_an_error_does_not_replace_the_old_capture(self):
        self.capture()
        good = self.read("good.tcap")
        server = Server("--simulate", DEVICE_1)
        try:
            process = subprocess.Popen([TRIBUTARY, "record", server.address, "--api-key", "k", "--out", self.path("good.tcap"),
                                        "--force", "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            server.process.kill()  # a lost connection: the recording ends with error 5
            _, stderr = process.communicate(timeout=TIMEOUT)
        finally:
            server.stop()
        self.assertNotEqual(process.returncode, 0, stderr)
        self.assertIn("left untouched", stderr)
        self.assertEqual(self.read("good.tcap"), good)
        # What was recorded is kept, closed, in the .partial.
        ok("export", self.path("good.tcap.partial"), "--format", "npy", "--out", self.path("partial.npy"))


class ImportTests(Files):
    def test_an_existing_output_needs_force_and_a_failed_import_keeps_it(self):
        self.capture()
        good = self.read("good.tcap")
        result = run("import", self.path("in.npy"), "--rate", 500, "--out", self.path("good.tcap"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("exists", result.stderr)
        self.assertEqual(self.read("good.tcap"), good)
        self.write("bad.csv", b"a,b\n1,2\n3,0x10\n")
        result = run("import", self.path("bad.csv"), "--rate", 500, "--out", self.path("good.tcap"), "--force")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(self.read("good.tcap"), good)
        self.assertFalse(os.path.exists(self.path("good.tcap.partial")))
        ok("import", self.path("in.npy"), "--rate", 500, "--out", self.path("good.tcap"), "--force")
        self.assertNotEqual(self.read("good.tcap"), good)

    def test_an_existing_partial_is_never_touched(self):
        crashed = os.urandom(4096)
        self.write("x.tcap.partial", crashed)
        np.save(self.path("in.npy"), np.zeros((2, 10)))
        for force in ([], ["--force"]):
            result = run("import", self.path("in.npy"), "--rate", 10, "--out", self.path("x.tcap"), *force)
            self.assertEqual(result.returncode, 1)
            self.assertIn("tributary repair", result.stderr)
        self.assertEqual(self.read("x.tcap.partial"), crashed)
        self.assertFalse(os.path.exists(self.path("x.tcap")))

    def expect_refused(self, name, *needles):
        result = run("import", self.path(name), "--rate", 1000, "--out", self.path("out.tcap"))
        self.assertEqual(result.returncode, 1, result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertFalse(os.path.exists(self.path("out.tcap")))
        self.assertFalse(os.path.exists(self.path("out.tcap.partial")))

    def test_more_channels_than_a_capture_holds_are_refused(self):
        np.save(self.path("wide.npy"), np.zeros((70000, 1)))
        self.expect_refused("wide.npy", "70000 channels", "(70000, 1)", "65535")
        self.write("wide.csv", (",".join(["1"] * 160_000) + "\n").encode())
        self.expect_refused("wide.csv", "160000 channels", "65535")

    def test_inputs_without_samples_are_refused(self):
        np.save(self.path("empty.npy"), np.zeros((2, 0)))
        self.expect_refused("empty.npy", "no samples")
        self.write("empty.csv", b"a,b\n")
        self.expect_refused("empty.csv", "no samples")

    def test_csv_numbers_must_be_decimal_and_within_float64(self):
        self.write("hex.csv", b"a,b\n1,2\n3,0x10\n")
        self.expect_refused("hex.csv", "line 3, column 2", "\"0x10\" is not a decimal number")
        self.write("big.csv", b"a,b\n1e400,2\n")
        self.expect_refused("big.csv", "line 2, column 1", "1e400 is out of range of float64")

    def test_a_one_line_csv_wider_than_a_capture_is_refused_at_the_bound(self):
        """Issue 38 item 13: a 16 MB line of 4,000,000 fields took tens of seconds and gigabytes before
        being refused; the reader stops at the 65,536th field, holding no more than a line's bound."""
        self.write("line.csv", b"0.5," * 3_999_999 + b"0.5\n")
        status, stderr, seconds, peak = measured("import", self.path("line.csv"), "--rate", 1000, "--out", self.path("out.tcap"))
        self.assertEqual(status, 1, stderr)
        self.assertIn("65535", stderr)
        self.assertIn("line 1", stderr)
        self.assertLess(seconds, 5, stderr)
        self.assertLess(peak, 200 << 20, stderr)
        self.assertFalse(os.path.exists(self.path("out.tcap")))
        self.assertFalse(os.path.exists(self.path("out.tcap.partial")))


class SameFileTests(Files):
    """Issue 38 item 11: an --out that is the input — by the same name, another spelling of it or a
    symbolic link to it — is refused even with --force, before anything is written."""

    def spellings(self, name):
        os.symlink(self.path(name), self.path("link-" + name))
        return [self.path(name), os.path.join(self.directory, ".", name), self.path("link-" + name)]

    def test_import_refuses_to_write_over_its_input(self):
        self.capture("x.tcap", channels=2, samples=1000)
        self.write("in.csv", b"a,b\n1,2\n3,4\n")
        for name in ("in.npy", "in.csv"):
            before = self.read(name)
            for out in self.spellings(name):
                result = run("import", self.path(name), "--rate", 10, "--out", out, "--force")
                self.assertEqual(result.returncode, 1, (out, result.stderr))
                self.assertIn("is the input", result.stderr)
                self.assertEqual(self.read(name), before, out)
        self.assertEqual([n for n in os.listdir(self.directory) if "partial" in n], [])

    def test_filter_refuses_to_write_over_its_input(self):
        self.capture("x.tcap", channels=2, samples=1000)
        before = self.read("x.tcap")
        for out in self.spellings("x.tcap"):
            result = run("filter", self.path("x.tcap"), "--out", out, "--force", "--filter", "analog:0")
            self.assertEqual(result.returncode, 1, (out, result.stderr))
            self.assertIn("is the input", result.stderr)
            self.assertEqual(self.read("x.tcap"), before, out)
        self.assertEqual([n for n in os.listdir(self.directory) if "partial" in n], [])

    def test_export_refuses_to_write_over_its_input_or_its_sidecar(self):
        np.save(self.path("c.npy"), np.arange(40, dtype=np.int16).reshape(2, 20))
        ok("import", self.path("c.npy"), "--rate", 10, "--out", self.path("c.tcap"))
        before = self.read("c.tcap")
        for out in self.spellings("c.tcap"):
            result = run("export", self.path("c.tcap"), "--format", "npy", "--out", out, "--force")
            self.assertEqual(result.returncode, 1, (out, result.stderr))
            self.assertEqual(self.read("c.tcap"), before)
        # --counts writes PATH.json beside PATH: never over the capture being exported.
        os.rename(self.path("c.tcap"), self.path("c.json"))
        result = run("export", self.path("c.json"), "--format", "npy", "--counts", "--out", self.path("c"), "--force")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("c.json", result.stderr)
        self.assertEqual(self.read("c.json"), before)
        self.assertFalse(os.path.exists(self.path("c")))

    def test_analyze_never_writes_its_plot_or_wisdom_over_an_input(self):
        """`analyze X --wisdom X` replaced the capture with 71 bytes of FFTW wisdom; a capture named
        *.svg was replaced by its own plot."""
        self.capture("x.tcap", channels=2, samples=4096)
        os.link(self.path("x.tcap"), self.path("x.svg"))
        before = self.read("x.tcap")
        os.symlink(self.path("x.tcap"), self.path("link-x.tcap"))
        for inputs, args in (([self.path("x.tcap")], ["--wisdom", self.path("link-x.tcap")]),
                             ([self.path("x.svg")], ["--welch", 256, "--plot", self.path("x.svg")]),
                             ([self.path("x.tcap")], ["--welch", 256, "--plot", self.path("x.svg")])):
            result = run("analyze", *inputs, *args)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            self.assertIn("is the input", result.stderr)
            self.assertEqual(self.read("x.tcap"), before, args)


class ExportAndRepairTests(Files):
    def damage_first_chunk(self):
        a = self.capture("x.tcap")
        data = bytearray(self.read("x.tcap"))
        chunks = [r for r in records(data) if r[1] == 1]
        self.assertGreater(len(chunks), 2)
        offset, _, length = chunks[0]
        data[offset + 88 + (length - 88) // 2] ^= 0x04
        self.write("x.tcap", bytes(data))
        return a, offset

    def test_a_damaged_configuration_chunk_is_exit_3_unless_allowed(self):
        a, offset = self.damage_first_chunk()
        result = run("export", self.path("x.tcap"), "--format", "npy", "--out", self.path("out.npy"))
        self.assertEqual(result.returncode, DAMAGED, result.stderr)
        self.assertIn(f"byte {offset}", result.stderr)
        self.assertFalse(os.path.exists(self.path("out.npy")))
        info = json.loads(ok("inspect", self.path("x.tcap"), "--json").stdout)
        self.assertEqual([d["offset"] for d in info["damage"]], [offset])
        self.assertEqual(info["configuration_records"], 1)
        self.assertEqual(info["sources"][0]["name"], "in.npy")  # the configuration, from its copy
        result = ok("export", self.path("x.tcap"), "--format", "npy", "--out", self.path("out.npy"), "--allow-damage")
        self.assertIn(f"byte {offset}", result.stderr)
        part = np.load(self.path("out.npy"))
        self.assertGreater(part.shape[1], 0)
        self.assertLess(part.shape[1], a.shape[1])
        np.testing.assert_array_equal(part, a[:, a.shape[1] - part.shape[1]:])

    def test_the_configuration_survives_the_loss_of_its_chunk(self):
        names = ["alpha", "beta"]
        rows = np.round(np.random.default_rng(3).normal(size=(200_000, 2)) * 100) / 8
        with open(self.path("in.csv"), "w") as f:
            f.write(",".join(names) + "\n")
            np.savetxt(f, rows, delimiter=",", fmt="%.17g")
        ok("import", self.path("in.csv"), "--rate", 1000, "--out", self.path("x.tcap"))
        data = bytearray(self.read("x.tcap"))
        offset, _, length = [r for r in records(data) if r[1] == 1][0]
        data[offset + 88 + (length - 88) // 2] ^= 0x04
        self.write("x.tcap", bytes(data))
        ok("export", self.path("x.tcap"), "--format", "csv", "--out", self.path("out.csv"), "--allow-damage")
        with open(self.path("out.csv")) as f:
            self.assertEqual(f.readline().strip(), ",".join(names))

    def test_a_configuration_record_written_from_the_spec_is_used_when_its_chunk_is_lost(self):
        import capture_spec as cs
        import wire_spec as ws
        config = ws.frame("configuration", ws.configuration("dev", "spec", [(0, 0, 100.0, -1.0, 1.0, "left", "V"),
                                                                            (1, 0, 100.0, -1.0, 1.0, "right", "V")], []),
                          sequence=1, timestamp_ns=5, source_id=5)
        rows = np.arange(2 * 24, dtype=float).reshape(2, 24)
        analog = [ws.frame("analog", ws.analog_f64([0, 1], rows[:, 8 * i:8 * (i + 1)].tolist()), sequence=2 + i,
                           timestamp_ns=10 + i, source_id=5) for i in range(3)]
        for footer in (True, False):
            for with_copy in (True, False):
                data = bytearray(cs.capture([[config, analog[0]], [analog[1]], [analog[2]]], footer=footer,
                                            configurations=[config] if with_copy else []))
                first = records(data)[0][0]
                data[first + 88 + 20] ^= 0x01  # the chunk holding the configuration: payload CRC fails
                self.write("spec.tcap", bytes(data))
                result = run("export", self.path("spec.tcap"), "--format", "csv", "--out", self.path("out.csv"), "--force")
                self.assertEqual(result.returncode, DAMAGED, result.stderr)
                self.assertIn(f"byte {first}", result.stderr)
                ok("export", self.path("spec.tcap"), "--format", "csv", "--out", self.path("out.csv"), "--allow-damage", "--force")
                with open(self.path("out.csv")) as f:
                    self.assertEqual(f.readline().strip(), "left,right" if with_copy else "ch0,ch1", (footer, with_copy))
                    np.testing.assert_array_equal(np.loadtxt(f, delimiter=",", ndmin=2).T, rows[:, 8:])

    def test_export_never_overwrites_silently(self):
        self.capture("e.tcap", channels=2, samples=50)
        path = self.path("e.tcap")
        self.write("existing.npy", b"precious")
        result = run("export", path, "--format", "npy", "--out", self.path("existing.npy"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("exists; pass --force", result.stderr)
        self.assertEqual(self.read("existing.npy"), b"precious")
        result = run("export", path, "--format", "npy", "--out", path, "--force")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("is the capture being exported", result.stderr)
        ok("export", path, "--format", "npy", "--out", self.path("existing.npy"), "--force")
        self.assertEqual(np.load(self.path("existing.npy")).shape, (2, 50))
        self.assertEqual([n for n in os.listdir(self.directory) if "partial" in n], [])

    def test_a_truncated_capture_is_exit_3_unless_allowed(self):
        a = self.capture("x.tcap")
        data = self.read("x.tcap")
        self.write("cut.tcap", data[: len(data) * 2 // 3])
        result = run("export", self.path("cut.tcap"), "--format", "npy", "--out", self.path("out.npy"))
        self.assertEqual(result.returncode, DAMAGED, result.stderr)
        self.assertIn("torn tail", result.stderr)
        result = ok("export", self.path("cut.tcap"), "--format", "npy", "--out", self.path("out.npy"), "--allow-damage")
        self.assertIn("no footer", result.stderr)
        part = np.load(self.path("out.npy"))
        np.testing.assert_array_equal(part, a[:, : part.shape[1]])

    def test_a_duplicated_chunk_is_reported_and_read_once(self):
        a = self.capture("x.tcap")
        data = self.read("x.tcap")
        offset, _, length = [r for r in records(data) if r[1] == 1][1]
        self.write("dup.tcap", data[: offset + length] + data[offset:offset + length] + data[offset + length:])
        result = run("export", self.path("dup.tcap"), "--format", "npy", "--out", self.path("out.npy"))
        self.assertEqual(result.returncode, DAMAGED, result.stderr)
        self.assertIn(f"byte {offset + length}", result.stderr)
        self.assertIn("duplicate", result.stderr)
        ok("export", self.path("dup.tcap"), "--format", "npy", "--out", self.path("out.npy"), "--allow-damage")
        np.testing.assert_array_equal(np.load(self.path("out.npy")), a)
        result = ok("repair", self.path("dup.tcap"), "--out", self.path("fixed.tcap"))
        self.assertIn("duplicate", result.stdout)
        self.assertNotIn("no damage", result.stdout)
        ok("export", self.path("fixed.tcap"), "--format", "npy", "--out", self.path("fixed.npy"))
        np.testing.assert_array_equal(np.load(self.path("fixed.npy")), a)

    def test_repair_copies_every_intact_record_whatever_the_footer_says(self):
        self.capture("x.tcap", samples=600_000)
        data = self.read("x.tcap")
        chunks = [r for r in records(data) if r[1] == 1]
        (o1, _, l1), (o2, _, l2) = next((p, q) for p, q in zip(chunks, chunks[1:]) if p[2] != q[2] and p[0] + p[2] == q[0])
        self.write("swapped.tcap", data[:o1] + data[o2:o2 + l2] + data[o1:o1 + l1] + data[o2 + l2:])
        ok("repair", self.path("swapped.tcap"), "--out", self.path("fixed.tcap"))
        fixed = [r for r in records(self.read("fixed.tcap")) if r[1] == 1]
        self.assertEqual(len(fixed), len(chunks))

    def test_repair_puts_records_back_in_sequence_order(self):
        """Issue 38 item 12: two chunk records swapped in the file were copied as they stood, "no damage
        found", and the repaired capture exported their samples out of order."""
        a = self.capture("x.tcap", samples=600_000)
        data = self.read("x.tcap")
        chunks = [r for r in records(data) if r[1] == 1]
        self.assertGreater(len(chunks), 4)
        (o1, _, l1), (o3, _, l3) = chunks[1], chunks[3]
        self.write("swapped.tcap", data[:o1] + data[o3:o3 + l3] + data[o1 + l1:o3] + data[o1:o1 + l1] + data[o3 + l3:])
        result = ok("repair", self.path("swapped.tcap"), "--out", self.path("fixed.tcap"))
        self.assertIn("out of sequence order", result.stdout)
        self.assertNotIn("no damage", result.stdout)
        info = json.loads(ok("inspect", self.path("fixed.tcap"), "--json").stdout)
        self.assertEqual(info["damage"], [])
        ok("export", self.path("fixed.tcap"), "--format", "npy", "--out", self.path("fixed.npy"))
        np.testing.assert_array_equal(np.load(self.path("fixed.npy")), a)

    def test_records_listed_out_of_order_are_damage_and_read_in_order(self):
        """A capture whose footer lists a source's chunks out of sequence order (written so by a faulty
        tool): export refuses it as damaged, reads it in sequence order with --allow-damage, and repair
        writes the records in order."""
        import capture_spec as cs
        import wire_spec as ws
        config = ws.frame("configuration", ws.configuration("dev", "spec", [(0, 0, 100.0, -1.0, 1.0, "x", "V")], []),
                          sequence=1, timestamp_ns=5, source_id=4)
        rows = np.arange(40, dtype=float).reshape(1, 40)
        analog = [ws.frame("analog", ws.analog_f64([0], rows[:, 8 * i:8 * (i + 1)].tolist(), first_sample=8 * i), sequence=2 + i,
                           timestamp_ns=10 + 80_000_000 * i, source_id=4) for i in range(5)]
        self.write("o.tcap", cs.capture([[config, analog[0]], [analog[3]], [analog[1], analog[2]], [analog[4]]]))
        result = run("export", self.path("o.tcap"), "--format", "npy", "--out", self.path("o.npy"))
        self.assertEqual(result.returncode, DAMAGED, result.stderr)
        self.assertIn("out of sequence order", result.stderr)
        ok("export", self.path("o.tcap"), "--format", "npy", "--out", self.path("o.npy"), "--allow-damage")
        np.testing.assert_array_equal(np.load(self.path("o.npy")), rows)
        result = ok("repair", self.path("o.tcap"), "--out", self.path("fixed.tcap"))
        self.assertIn("out of sequence order", result.stdout)
        ok("export", self.path("fixed.tcap"), "--format", "npy", "--out", self.path("fixed.npy"))
        np.testing.assert_array_equal(np.load(self.path("fixed.npy")), rows)
        # Sequence numbers that restart later in time (a new session) are not out of order.
        restarted = [ws.frame("analog", ws.analog_f64([0], rows[:, 8 * i:8 * (i + 1)].tolist(), first_sample=8 * i), sequence=1 + i,
                              timestamp_ns=10_000_000_000 + 80_000_000 * i, source_id=4) for i in range(2)]
        self.write("s.tcap", cs.capture([[config] + analog[:3], restarted]))
        ok("export", self.path("s.tcap"), "--format", "npy", "--out", self.path("s.npy"))
        np.testing.assert_array_equal(np.load(self.path("s.npy")), np.concatenate([rows[:, :24], rows[:, :16]], axis=1))

    def test_repair_refuses_an_existing_output_and_in_place_needs_force(self):
        self.capture("x.tcap")
        self.write("other.tcap", b"keep me")
        result = run("repair", self.path("x.tcap"), "--out", self.path("other.tcap"))
        self.assertEqual(result.returncode, 1)
        self.assertEqual(self.read("other.tcap"), b"keep me")
        before = self.read("x.tcap")
        result = run("repair", self.path("x.tcap"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("--force", result.stderr)
        self.assertEqual(self.read("x.tcap"), before)
        result = ok("repair", self.path("x.tcap"), "--force")
        self.assertIn("no damage", result.stdout)
        self.assertEqual(sorted(os.listdir(self.directory)), ["in.npy", "other.tcap", "x.tcap"])


if __name__ == "__main__":
    unittest.main()
