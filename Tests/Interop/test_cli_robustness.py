"""Issue 8 (trust) for the command line: every case an auditor reproduced, run against the real binary.

- peer text (descriptions, messages, names) cannot forge output lines or reach the terminal as
  control characters;
- configuration foot-guns (empty API key, a public key as the CURVE secret, an empty allow-list) are
  refused at start;
- a closed pipe or a full disk on standard output or error ends a command quietly, never with a
  signal;
- directories, huge or non-finite numbers and out-of-range ports get a clear usage error;
- `analyze` labels, orders and selects sources correctly and names what is missing;
- connecting to a refused port, an unresolvable host or a publisher with other security fails at
  once, naming the cause.

The binary comes from the environment variable TRIBUTARY; everything runs on 127.0.0.1 with bounded
times.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire_spec as w  # noqa: E402
from tool_process import TRIBUTARY, ScratchDirectory  # noqa: E402

TIMEOUT = 20  # seconds any one command may take
DEVICE = "id=1,name=dev,rate=1000,channels=4,freq=50,amp=1,noise=0.01,block=100"
CONTROL = set(chr(c) for c in range(0x20)) | set(chr(c) for c in range(0x7F, 0xA0)) | {
    "\u2028", "\u2029", "\u202e", "\u2066", "\u200f"}
# What a hostile peer puts in every text field: a forged serve line, an ANSI escape, C1 CSI,
# a line separator and a right-to-left override.
EVIL = "evil\nsubscriber - session 999 'forged': 0 frames sent\x1b[2J\x9b31m\u2028\u202eend"


def run(*args, timeout=TIMEOUT, **kwargs):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kwargs)


def raw_run(*args, timeout=TIMEOUT, **kwargs):
    return subprocess.run([TRIBUTARY, *map(str, args)], timeout=timeout, **kwargs)


def control_characters(text):
    """The unsafe characters of `text`, newlines between lines excepted."""
    return sorted({c for line in text.split("\n") for c in line if c in CONTROL})


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `tributary serve` process; its stdout is read line by line."""

    def __init__(self, *args):
        self.process = subprocess.Popen([TRIBUTARY, "serve", "--bind", "tcp://127.0.0.1:0", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        line = self.wait_for("listening on ")
        self.address = line.split("listening on ", 1)[1].strip()

    def wait_for(self, prefix, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"serve printed no line starting with {prefix!r}; saw {self.lines}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                rest, _ = self.process.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                rest, _ = self.process.communicate(timeout=TIMEOUT)
            self.lines += rest.splitlines(keepends=True)
        else:
            self.process.communicate(timeout=TIMEOUT)
        return "".join(self.lines)


class CLIRobustnessTests(ScratchDirectory, unittest.TestCase):
    directory_prefix = "tributary-robust-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A frame file of two sources, written from the spec: source 2 (int16) comes first, then
        # source 1 (float64); each has 4 channels; plus a message and an XML frame with hostile text.
        def config(rate):
            return [(i, 0, rate, -10.0, 10.0, f"ai{i}", "V") for i in range(4)]
        rows = [[float((i * 7 + k) % 13) for k in range(2048)] for i in range(4)]
        counts = [[(i * 5 + k) % 100 - 50 for k in range(2048)] for i in range(4)]
        frames = [
            w.frame("configuration", w.configuration("int16 device", "sim", config(1000.0), []), source_id=2),
            w.frame("analog", w.analog_i16(range(4), counts, [0.01] * 4, [0.0] * 4), source_id=2, sequence=1),
            w.frame("configuration", w.configuration("float device", "sim", config(1000.0), []), source_id=1, sequence=2),
            w.frame("analog", w.analog_f64(range(4), rows), source_id=1, sequence=3),
            w.frame("message", w.message(3, EVIL), sequence=4),
            w.frame("xml", w.xml("<a>" + EVIL + "</a>"), sequence=5),
            w.frame("configuration", w.configuration(EVIL, EVIL, [], []), source_id=3, sequence=6),
        ]
        cls.frames = cls.path("two-sources.frames")
        with open(cls.frames, "wb") as out:
            out.write(b"".join(frames))
        # A larger frame file: many lines of `inspect` output, for closed pipes and full disks.
        cls.big = cls.path("big.frames")
        with open(cls.big, "wb") as out:
            out.write(b"".join(w.frame("message", w.message(1, f"line {i}"), sequence=i) for i in range(20_000)))

    def assertUsageError(self, result, *needles):
        self.assertEqual(result.returncode, 2, f"stdout {result.stdout!r} stderr {result.stderr!r}")
        for needle in needles:
            self.assertIn(needle, result.stderr)
        self.assertNotIn("Fatal error", result.stderr)

    # MARK: 7. Log injection

    def test_serve_escapes_subscriber_descriptions_in_its_lines_and_list(self):
        server = Server("--api-key", "k", "--simulate", DEVICE, "--status-interval", "0.2")
        try:
            sub = run("subscribe", server.address, "--api-key", "k", "--description", EVIL, "--duration", 1)
            self.assertEqual(sub.returncode, 0, sub.stderr)
            server.wait_for("subscriber - ")
        finally:
            out = server.stop()
        self.assertEqual(control_characters(out), [], out)
        self.assertFalse([line for line in out.splitlines() if line.startswith("subscriber - session 999")], out)
        self.assertIn("evil\\nsubscriber - session 999", out)
        self.assertIn("  session ", out)  # the list printed by --status-interval, escaped too

    def test_subscribe_escapes_what_the_publisher_sends(self):
        server = Server("--api-key", "k", "--simulate", "id=1,name=" + EVIL.replace(",", ";").replace("=", ":") + ",rate=1000,channels=1",
                        "--description", EVIL)
        try:
            for extra in ([], ["--json"]):
                sub = run("subscribe", server.address, "--api-key", "k", "--duration", 1, *extra)
                self.assertEqual(sub.returncode, 0, sub.stderr)
                self.assertEqual(control_characters(sub.stdout), [], sub.stdout[:2000])
                self.assertEqual(control_characters(sub.stderr), [], sub.stderr)
                self.assertIn("configuration", sub.stdout)
                if extra:
                    for line in sub.stdout.splitlines():
                        json.loads(line)
                else:
                    self.assertIn("evil\\nsubscriber", sub.stdout)
        finally:
            server.stop()

    def test_inspect_escapes_messages_xml_and_names(self):
        for extra in ([], ["--json"]):
            result = run("inspect", self.frames, *extra)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(control_characters(result.stdout), [], result.stdout)
        decoded = [json.loads(line) for line in run("inspect", self.frames, "--json").stdout.splitlines()]
        self.assertEqual(decoded[4]["content"]["text"], EVIL)  # escaped in JSON, the same text once decoded

    # MARK: 8. Configuration foot-guns

    def test_an_empty_api_key_is_refused(self):
        self.assertUsageError(run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "", "--simulate", DEVICE, timeout=10),
                              "--api-key", "empty")

    def test_a_public_key_file_is_refused_as_the_curve_secret(self):
        prefix = self.path("server")
        self.assertEqual(run("keygen", "--out", prefix, "--force").returncode, 0)
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--curve-secret", prefix + ".pub",
                     "--curve-accept-any", timeout=10)
        self.assertUsageError(result, "public key")
        # The same key copied to a .key name, keygen's comment kept: still a public key.
        disguised = self.path("disguised.key")
        shutil.copy(prefix + ".pub", disguised)
        self.assertUsageError(run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--curve-secret", disguised,
                                  "--curve-accept-any", timeout=10), "public key")

    def test_subscribers_refuse_swapped_key_files(self):
        prefix = self.path("pair")
        self.assertEqual(run("keygen", "--out", prefix, "--force").returncode, 0)
        # The secret key given as the server's public key, and a public key as the subscriber's secret.
        self.assertUsageError(run("subscribe", "127.0.0.1:5", "--api-key", "k", "--curve-server-key", prefix + ".key",
                                  timeout=10), "--curve-server-key", "secret key")
        self.assertUsageError(run("subscribe", "127.0.0.1:5", "--api-key", "k", "--curve-server-key", prefix + ".pub",
                                  "--curve-key", prefix + ".pub", timeout=10), "--curve-key", "public key")

    def test_an_empty_allow_list_is_refused(self):
        prefix = self.path("server2")
        self.assertEqual(run("keygen", "--out", prefix, "--force").returncode, 0)
        clients = self.path("clients.txt")
        with open(clients, "w", encoding="utf-8") as out:
            out.write("# nobody yet\n\n")
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--curve-secret", prefix + ".key",
                     "--curve-clients", clients, timeout=10)
        self.assertUsageError(result, "no client key")

    # MARK: 13. Closed pipes and full disks

    def test_subscribe_into_a_closed_pipe_ends_quietly(self):
        server = Server("--api-key", "k", "--simulate", DEVICE)
        try:
            # subscribe ... 2>&1 | head -1
            process = subprocess.Popen([TRIBUTARY, "subscribe", server.address, "--api-key", "k", "--duration", "10"],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            process.stdout.readline()
            process.stdout.close()
            status = process.wait(timeout=TIMEOUT)
            self.assertGreater(status, 0, "killed by a signal" if status < 0 else "exit 0 after losing its output")
            # subscribe ... 2>/dev/full
            with open("/dev/full", "w") as full:
                result = raw_run("subscribe", server.address, "--api-key", "k", "--duration", 0.5,
                                 stdout=subprocess.DEVNULL, stderr=full)
            self.assertGreater(result.returncode, 0)
        finally:
            server.stop()

    def test_listing_commands_end_quietly_on_a_closed_pipe(self):
        for args in (["inspect", self.big], ["inspect", self.big, "--json"], ["filter", self.big, "--out", "-", "--filter", "analog:0"]):
            process = subprocess.Popen([TRIBUTARY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            process.stdout.read(100)
            process.stdout.close()
            status = process.wait(timeout=TIMEOUT)
            error = process.stderr.read().decode()
            process.stderr.close()
            self.assertGreater(status, 0, f"{args}: {'killed by a signal' if status < 0 else 'exit 0'}")
            self.assertEqual(error, "", args)

    def test_a_full_disk_is_an_error_not_a_crash(self):
        cases = [["inspect", self.big], ["inspect", self.frames, "--json"], ["filter", self.big, "--out", "-", "--filter", "analog:0"],
                 ["analyze", self.frames], ["keygen"], ["--help"], ["analyze", "--help"]]
        for args in cases:
            with open("/dev/full", "w") as full:
                result = raw_run(*args, stdout=full, stderr=subprocess.PIPE)
            error = result.stderr.decode()
            self.assertEqual(result.returncode, 1, f"{args}: {error}")
            self.assertIn("No space left on device", error, args)
            with open("/dev/full", "w") as full:
                result = raw_run(*args, stdout=subprocess.DEVNULL, stderr=full)
            self.assertGreaterEqual(result.returncode, 0, args)
        # Errors into a full standard error: still an exit status, no trap.
        with open("/dev/full", "w") as full:
            result = raw_run("inspect", self.directory, stdout=subprocess.DEVNULL, stderr=full)
        self.assertEqual(result.returncode, 1)

    # MARK: 14. Bounds

    def test_directories_are_refused_as_inputs(self):
        for args in (["inspect", self.directory], ["analyze", self.directory],
                     ["filter", self.directory, "--out", self.path("out.frames"), "--filter", "analog:0"]):
            result = run(*args)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn("is a directory", result.stderr)

    def test_filter_refuses_to_overwrite_its_input(self):
        copy = self.path("copy.frames")
        shutil.copy(self.frames, copy)
        with open(copy, "rb") as file:
            before = file.read()
        result = run("filter", copy, "--out", copy, "--filter", "analog:0")
        self.assertEqual(result.returncode, 1)
        self.assertIn("destroy the input", result.stderr)
        with open(copy, "rb") as file:
            self.assertEqual(file.read(), before)

    def test_sizes_beyond_the_machine_or_the_format_are_usage_errors(self):
        self.assertUsageError(run("analyze", self.frames, "--welch", 1099511627776), "--welch", "4194304")
        self.assertUsageError(run("analyze", self.frames, "--welch", 1000000000), "--welch", "4194304")
        self.assertUsageError(run("analyze", self.frames, "--spectrum", 1 << 40), "--spectrum")
        self.assertUsageError(run("analyze", self.frames, "--channels", "0-1000000"), "--channels", "too large")
        self.assertUsageError(run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate",
                                  "id=1,channels=65535,rate=1000000", timeout=10), "--simulate", "67108864")
        self.assertUsageError(run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", "id=1,channels=0",
                                  timeout=10), "channels=0")
        self.assertUsageError(run("serve", "--bind", "tcp://127.0.0.1:99999", "--api-key", "k", timeout=10), "99999", "0...65535")
        self.assertUsageError(run("subscribe", "127.0.0.1:5", "--api-key", "k", "--timeout", "1e300", timeout=10),
                              "--timeout", "6553")
        # libzmq's heartbeat TTL (16 bits of deciseconds) cannot take more: 7000 failed inside zmq_setsockopt.
        self.assertUsageError(run("subscribe", "127.0.0.1:5", "--api-key", "k", "--timeout", "7000", timeout=10), "--timeout")

    def test_an_export_beyond_the_memory_available_is_refused_before_it_starts(self):
        import numpy as np
        counts, floats = self.path("counts.npy"), self.path("floats.npy")
        np.save(counts, (np.arange(4 * 50_000, dtype=np.int64).reshape(4, -1) % 2000 - 1000).astype(np.int16))
        np.save(floats, np.linspace(-1, 1, 4 * 50_000).reshape(4, -1))
        for npy in (counts, floats):
            self.assertEqual(run("import", npy, "--rate", 1000, "--out", npy + ".tcap", "--force").returncode, 0)
        out = self.path("export.tdms")
        # int16 counts exported as physical values: 4 × 50 000 × (2 + 8) bytes = 2 000 000.
        env = dict(os.environ, TRIBUTARY_MEMORY_LIMIT="1999999")
        result = run("export", counts + ".tcap", "--format", "tdms", "--out", out, env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        for needle in ("needs about 1.9 MiB of memory", "1.9 MiB is available", "--channels", "--counts", "TRIBUTARY_MEMORY_LIMIT"):
            self.assertIn(needle, result.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.directory) if "partial-export" in f], [])
        # The counts alone (2 bytes a sample), or half the channels, fit; so does the same limit written as 2m.
        for args, limit in ((["--counts"], "1999999"), (["--channels", "0-1"], "1999999"), ([], "2m")):
            result = run("export", counts + ".tcap", "--format", "tdms", "--out", out, "--force", *args,
                         env=dict(os.environ, TRIBUTARY_MEMORY_LIMIT=limit))
            self.assertEqual(result.returncode, 0, f"{args}: {result.stderr}")
        # float64: 4 × 50 000 × 8 = 1 600 000 bytes; no --counts advice for a source that has none.
        result = run("export", floats + ".tcap", "--format", "npy", "--out", self.path("f.npy"),
                     env=dict(os.environ, TRIBUTARY_MEMORY_LIMIT="1.5m"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("needs about 1.5 MiB", result.stderr)
        self.assertNotIn("--counts", result.stderr)
        self.assertUsageError(run("export", floats + ".tcap", "--format", "npy", "--out", self.path("f.npy"),
                                  env=dict(os.environ, TRIBUTARY_MEMORY_LIMIT="lots")), "TRIBUTARY_MEMORY_LIMIT", "'lots' is not a size")
        # CSV is built as text in memory (~80 bytes a value with its copies): 10 MiB holds the NPY, not the CSV.
        ten = dict(os.environ, TRIBUTARY_MEMORY_LIMIT="10m")
        self.assertEqual(run("export", floats + ".tcap", "--format", "npy", "--out", self.path("f.npy"), env=ten).returncode, 0)
        result = run("export", floats + ".tcap", "--format", "csv", "--out", self.path("f.csv"), env=ten)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("is available", result.stderr)
        self.assertFalse(os.path.exists(self.path("f.csv")))

    def test_export_times_beyond_any_capture_select_nothing_or_everything(self):
        import numpy as np
        npy = self.path("times.npy")
        np.save(npy, np.arange(3 * 5000, dtype=np.float64).reshape(3, -1))
        self.assertEqual(run("import", npy, "--rate", 1000, "--out", npy + ".tcap", "--force").returncode, 0)
        for args, samples in ((["--start", "1e300"], 0), (["--duration", "1e300"], 5000), (["--start", "2", "--duration", "1e300"], 3000),
                              (["--start", "1e300", "--duration", "1e300"], 0)):
            out = self.path("times-out.npy")
            result = run("export", npy + ".tcap", "--format", "npy", "--out", out, "--force", *args)
            self.assertEqual(result.returncode, 0, f"{args}: {result.stderr}")
            self.assertEqual(np.load(out).shape, (3, samples), args)

    def test_times_and_rates_from_a_capture_never_trap(self):
        """Issue 38: a frame time near either end of timestamp_ns, or a rate of 1e-300 Hz in a configuration,
        trapped `inspect` (a frame file too), `export --start` and `export --time-column`."""
        import capture_spec as cs
        lowest, highest = -2 ** 63, 2 ** 63 - 1

        def capture(name, rate, times):
            config = w.frame("configuration", w.configuration("d", "t", [(0, 0, rate, -1.0, 1.0, "a", "V")], []), sequence=1,
                             timestamp_ns=times[0], source_id=1)
            analog = [w.frame("analog", w.analog_f64([0], [[1.0, 2.0]], first_sample=2 * i), sequence=2 + i, timestamp_ns=t, source_id=1)
                      for i, t in enumerate(times)]
            with open(self.path(name), "wb") as f:
                f.write(cs.capture([[config] + analog]))
            return self.path(name)

        span = capture("span.tcap", 100.0, [lowest, highest])
        tiny = capture("tiny.tcap", 1e-300, [0, 10])
        with open(self.path("oldest.frames"), "wb") as f:
            f.write(w.frame("message", w.message(1, "x"), sequence=1, timestamp_ns=lowest))
        # A rate of 1e-300 Hz is outside what a configuration may hold (PROTOCOL.md §5.1): the configuration
        # is refused where it is decoded, so the source has no rate to select by time with.
        for args, status, said in ((["inspect", span], 0, None), (["inspect", span, "--json"], 0, None),
                                   (["inspect", self.path("oldest.frames")], 0, None),
                                   (["export", span, "--format", "csv", "--time-column", "--out", self.path("t.csv"), "--force"], 0, None),
                                   (["export", span, "--format", "npy", "--start", "0.01", "--out", self.path("t.npy"), "--force"], 1,
                                    "beyond the range of timestamp_ns"),
                                   (["export", tiny, "--format", "npy", "--start", "0", "--out", self.path("t.npy"), "--force"], 1,
                                    "sampling rate"),
                                   (["inspect", tiny], 0, None)):
            result = run(*args)
            self.assertEqual(result.returncode, status, f"{args}: {result.stderr}")
            self.assertNotIn("Fatal", result.stderr)
            if said:
                self.assertIn(said, result.stderr)
        self.assertIn("1677-09-21T00:12:43.145224192Z", run("inspect", span).stdout)
        with open(self.path("t.csv")) as f:
            rows = [[float(x) for x in line.split(",")] for line in f.read().splitlines()[1:]]
        self.assertEqual([r[1] for r in rows], [1.0, 2.0, 1.0, 2.0])
        for got, expected in zip([r[0] for r in rows], [0.0, 0.01, 2 ** 64 / 1e9, 2 ** 64 / 1e9 + 0.01]):
            self.assertAlmostEqual(got, expected, delta=1e-5)

    def test_every_numeric_flag_refuses_nan_infinity_negative_and_huge_values(self):
        flags = {
            ("analyze", self.frames): ["--rate", "--welch", "--spectrum", "--harmonics", "--jobs", "--overlap", "--int16-scale"],
            ("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", DEVICE):
                ["--linger", "--status-interval", "--wait-subscribers"],
            ("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--replay", self.frames): ["--speed"],
            ("subscribe", "127.0.0.1:5", "--api-key", "k"): ["--duration", "--timeout"],
            ("inspect", self.frames): ["--max-frame-size"],
            ("demo", "--out", self.path("demo")): ["--seconds"],
        }
        for base, names in flags.items():
            for name in names:
                for value in ("nan", "inf", "-inf", "-1", "1e300", "99999999999999999999999"):
                    if name == "--int16-scale" and value not in ("nan", "inf", "-inf"):
                        continue  # any finite scale is a valid calibration
                    with self.subTest(command=base[0], flag=name, value=value):
                        try:
                            result = run(*base, name, value, timeout=10)
                        except subprocess.TimeoutExpired:
                            self.fail(f"{base[0]} {name} {value} was accepted and ran")
                        self.assertUsageError(result, name)

    # MARK: 15. analyze

    def test_analyze_labels_each_source_with_its_type_and_lists_them_by_id(self):
        result = run("analyze", self.frames, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        sources = json.loads(result.stdout)["sources"]
        self.assertEqual([s["id"] for s in sources], [1, 2])
        self.assertEqual({s["id"]: s["dtype"] for s in sources}, {1: "float64", 2: "int16"})
        table = run("analyze", self.frames).stdout
        self.assertLess(table.index("source 1"), table.index("source 2"))
        self.assertIn("source 2 'int16 device': 4 channels x 2048 samples, int16", table)

    def test_analyze_source_selects_and_names_what_is_missing(self):
        only = json.loads(run("analyze", self.frames, "--json", "--source", 2).stdout)
        self.assertEqual([s["id"] for s in only["sources"]], [2])
        both = json.loads(run("analyze", self.frames, "--json", "--source", "2", "--source", "1").stdout)
        self.assertEqual([s["id"] for s in both["sources"]], [1, 2])
        missing = run("analyze", self.frames, "--source", 5)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("source 5", missing.stderr)
        self.assertIn("sources with analog data: 1, 2", missing.stderr)
        self.assertUsageError(run("analyze", self.frames, "--source", "0"), "--source")

    def test_analyze_names_the_channels_that_exist(self):
        result = run("analyze", self.frames, "--channels", 9)
        self.assertEqual(result.returncode, 1)
        self.assertIn("channel 9", result.stderr)
        self.assertIn("0-3", result.stderr)
        self.assertNotIn("no analog data", result.stderr)

    def test_analyze_writes_plots_only_as_svg(self):
        png = self.path("out.png")
        self.assertUsageError(run("analyze", self.frames, "--welch", 256, "--plot", png), "--plot", ".svg")
        self.assertFalse(os.path.exists(png))
        svg = self.path("out.svg")
        result = run("analyze", self.frames, "--welch", 256, "--plot", svg)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(svg, encoding="utf-8") as file:
            self.assertTrue(file.read().startswith("<svg"))

    def test_a_repaired_capture_is_not_said_to_lack_a_footer(self):
        server = Server("--api-key", "k", "--simulate", DEVICE)
        try:
            capture = self.path("live.tcap")
            recorded = run("record", server.address, "--api-key", "k", "--out", capture, "--duration", 1)
            self.assertEqual(recorded.returncode, 0, recorded.stderr)
        finally:
            server.stop()
        repaired = self.path("repaired.tcap")
        result = run("repair", capture, "--out", repaired)
        self.assertEqual(result.returncode, 0, result.stderr)
        analysed = run("analyze", repaired)
        self.assertEqual(analysed.returncode, 0, analysed.stderr)
        self.assertNotIn("no footer", analysed.stderr)

    # MARK: 16. Failing fast

    def assertFailsFast(self, args, needle, seconds=4):
        start = time.monotonic()
        result = run(*args)
        elapsed = time.monotonic() - start
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("error 7", result.stderr)
        self.assertIn(needle, result.stderr)
        self.assertLess(elapsed, seconds, result.stderr)

    def test_a_refused_port_is_named_at_once(self):
        port = closed_port()
        self.assertFailsFast(["subscribe", f"127.0.0.1:{port}", "--api-key", "k", "--timeout", 15],
                             f"connection refused by 127.0.0.1:{port}")
        self.assertFailsFast(["record", f"127.0.0.1:{port}", "--api-key", "k", "--timeout", 15, "--out", self.path("refused.tcap")],
                             f"connection refused by 127.0.0.1:{port}")

    def test_an_unresolvable_host_is_named_at_once(self):
        self.assertFailsFast(["subscribe", "nohost.invalid:5599", "--api-key", "k", "--timeout", 15],
                             "cannot resolve host 'nohost.invalid'", seconds=8)

    def test_curve_on_one_side_only_is_named_at_once(self):
        prefix = self.path("curve")
        self.assertEqual(run("keygen", "--out", prefix, "--force").returncode, 0)
        server = Server("--api-key", "k", "--simulate", DEVICE, "--curve-secret", prefix + ".key", "--curve-accept-any")
        try:
            self.assertFailsFast(["subscribe", server.address, "--api-key", "k", "--timeout", 15], "requires CURVE")
        finally:
            server.stop()
        server = Server("--api-key", "k", "--simulate", DEVICE)
        try:
            self.assertFailsFast(["subscribe", server.address, "--api-key", "k", "--timeout", 15,
                                  "--curve-server-key", prefix + ".pub"], "CURVE")
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()


class HelpAndVersionTests(unittest.TestCase):
    """Issue 14 item 4: `--version` and `tributary help COMMAND`."""

    def test_version_names_the_tool_and_its_formats(self):
        result = subprocess.run([TRIBUTARY, "--version"], capture_output=True, text=True, timeout=20)
        self.assertEqual(result.returncode, 0)
        self.assertRegex(result.stdout, r"^tributary \d+\.\d+\.\d+ \(wire protocol version \d+, capture format version \d+\)")

    def test_help_command_is_the_commands_usage(self):
        for command in ("analyze", "serve", "record", "keygen"):
            via_help = subprocess.run([TRIBUTARY, "help", command], capture_output=True, text=True, timeout=20)
            via_flag = subprocess.run([TRIBUTARY, command, "--help"], capture_output=True, text=True, timeout=20)
            self.assertEqual(via_help.returncode, 0)
            self.assertEqual(via_help.stdout, via_flag.stdout)
        unknown = subprocess.run([TRIBUTARY, "help", "nope"], capture_output=True, text=True, timeout=20)
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("unknown command 'nope'", unknown.stderr)
