"""`tributary bench` end to end (a few seconds): a loopback sweep (table, JSON, SVG), a run against a
running `tributary serve` with two simulated sources and two subscribers, `subscribe --summary`,
`record --fast-codec`, and bad flags that must fail with a clear error before anything is measured.

Runs the release binary named by the environment variable TRIBUTARY.
"""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from tool_process import TRIBUTARY as BIN  # noqa: E402


def bench(*args, expect=0, timeout=60):
    proc = subprocess.run([BIN, "bench", *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != expect:
        raise AssertionError(f"exit {proc.returncode} (expected {expect}): {proc.stderr}\n{proc.stdout}")
    return proc


class ServeProcess:
    def __init__(self, *simulate):
        args = [BIN, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k"]
        for spec in simulate:
            args += ["--simulate", spec]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise AssertionError(f"serve printed {line!r}")
        self.address = line.split()[-1]

    def close(self):
        self.proc.terminate()
        self.proc.wait(20)
        self.proc.stdout.close()


class BenchCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_loopback_sweep_writes_table_json_and_svg(self):
        out = bench("--rates", "200,2000", "--sizes", "16,256", "--seconds", "0.3", "--json", self.path("b.json"),
                    "--svg", self.path("b.svg"))
        lines = out.stdout.splitlines()
        self.assertIn("p99.9 µs", lines[0])
        self.assertEqual(len(lines), 1 + 4, out.stdout)
        self.assertTrue(lines[1].startswith("8x16 f64 (1 KiB)"), lines[1])
        self.assertTrue(lines[3].startswith("8x256 f64 (16 KiB)"), lines[3])
        with open(self.path("b.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["mode"], doc["delivery"], doc["subscribers"]), ("loopback", "live", 1))
        points = doc["points"]
        self.assertEqual([(p["samples_per_channel"], p["offered_frames_per_s"]) for p in points],
                         [(16, 200.0), (16, 2000.0), (256, 200.0), (256, 2000.0)])
        for p in points:
            self.assertEqual(p["sample_bytes_per_frame"], 8 * 8 * p["samples_per_channel"])
            # Everything offered either arrived or was announced lost; nothing vanished.
            self.assertEqual(p["unaccounted_lost"], 0)
            self.assertAlmostEqual(p["arrived_frames_per_s"], p["offered_frames_per_s"], delta=0.15 * p["offered_frames_per_s"])
            lat = p["latency_us"]
            self.assertGreater(lat["frames"], 0)
            self.assertTrue(0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= max(lat["max"], lat["p999"]), lat)
            self.assertAlmostEqual(p["delivered_mb_per_s"],
                                   p["delivered_frames_per_s"] * p["sample_bytes_per_frame"] / 1e6, delta=1e-6)
        svg = ET.parse(self.path("b.svg")).getroot()
        polylines = [e for e in svg.iter() if e.tag.endswith("polyline")]
        self.assertEqual(len(polylines), 4)  # p50 and p99 for each of the two frame sizes
        for line in polylines:
            self.assertEqual(len(line.get("points").split()), 2)

    def test_lossless_loopback_loses_nothing(self):
        bench("--lossless", "--rates", "max", "--sizes", "1024", "--seconds", "0.3", "--json", self.path("l.json"))
        with open(self.path("l.json")) as f:
            point = json.load(f)["points"][0]
        self.assertEqual((point["announced_lost"], point["publisher_dropped"], point["unaccounted_lost"]), (0, 0, 0))
        self.assertGreater(point["delivered_frames_per_s"], 0)

    def test_against_a_running_serve_measures_each_source(self):
        serve = ServeProcess("id=1,name=slow,rate=3200,channels=8,block=16", "id=2,name=big,rate=20480,channels=8,block=1024")
        self.addCleanup(serve.close)
        out = bench(serve.address, "--api-key", "k", "--seconds", "0.5", "--subscribers", "2", "--json", self.path("r.json"))
        self.assertIn("source 1 (1 KiB)", out.stdout)
        self.assertIn("source 2 (64 KiB)", out.stdout)
        with open(self.path("r.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["mode"], doc["subscribers"]), ("publisher", 2))
        rates = {p["source_id"]: p for p in doc["points"]}
        self.assertAlmostEqual(rates[1]["arrived_frames_per_s"], 200, delta=30)
        self.assertAlmostEqual(rates[2]["arrived_frames_per_s"], 20, delta=6)
        for p in doc["points"]:
            self.assertEqual(len(p["delivered_frames_per_s_each"]), 2)
            self.assertEqual(p["unaccounted_lost"], 0)
            self.assertIsNone(p["error"])
        # Only source 2, selected.
        out = bench(serve.address, "--api-key", "k", "--sources", "2", "--seconds", "0.3")
        self.assertNotIn("source 1", out.stdout)
        self.assertIn("source 2", out.stdout)
        err = bench(serve.address, "--api-key", "k", "--sources", "7", "--seconds", "0.3", expect=1).stderr
        self.assertIn("no source 7", err)
        err = bench(serve.address, "--api-key", "wrong", "--seconds", "0.3", expect=1).stderr
        self.assertIn("error 1", err)
        # Two processes measuring the same window; a start time already past is refused.
        start = time.time() + 1.5
        procs = [subprocess.Popen([BIN, "bench", serve.address, "--api-key", "k", "--sources", "1", "--seconds", "0.3",
                                   "--start-at", f"{start:.3f}", "--json", self.path(f"a{i}.json")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
        for i in range(2):
            with open(self.path(f"a{i}.json")) as f:
                point = json.load(f)["points"][0]
            self.assertAlmostEqual(point["window_start_unix"], start, delta=0.01)
            self.assertAlmostEqual(point["arrived_frames_per_s"], 200, delta=40)
        err = bench(serve.address, "--api-key", "k", "--seconds", "0.3", "--start-at", f"{time.time() - 5:.3f}", expect=1).stderr
        self.assertIn("--start-at: the sessions were started", err)

    def test_a_replay_that_ends_during_the_point_is_measured_to_its_last_frame(self):
        import numpy as np
        np.save(self.path("r.npy"), np.sin(np.arange(2 * 4096 * 200).reshape(2, -1) * 0.01))
        subprocess.run([BIN, "import", self.path("r.npy"), "--rate", "100000", "--out", self.path("r.tcap")],
                       check=True, capture_output=True, timeout=60)
        proc = subprocess.Popen([BIN, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--replay", self.path("r.tcap"),
                                 "--speed", "max", "--linger", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.stdout.close)
        address = proc.stdout.readline().split()[-1]
        started = time.time()
        out = bench(address, "--api-key", "k", "--seconds", "600", "--warmup", "0", "--json", self.path("replay.json"))
        self.assertLess(time.time() - started, 60)
        self.assertIn("the publisher ended the session after", out.stdout)
        with open(self.path("replay.json")) as f:
            point = json.load(f)["points"][0]
        self.assertTrue(point["publisher_closed"])
        self.assertLess(point["seconds"], 600)
        # Every frame of the replay, each 2 x 4096 float64, none lost; replayed frames get no latency.
        self.assertAlmostEqual(point["delivered_frames_per_s"] * point["seconds"], 200, delta=0.5)
        self.assertEqual((point["sample_bytes_per_frame"], point["replayed_frames"], point["latency_us"]), (65536, 200, None))
        self.assertEqual((point["announced_lost"], point["unaccounted_lost"]), (0, 0))

    def test_subscribe_summary_counts_instead_of_printing(self):
        serve = ServeProcess("id=1,name=s,rate=16000,channels=8,block=16")
        self.addCleanup(serve.close)
        proc = subprocess.run([BIN, "subscribe", serve.address, "--api-key", "k", "--summary", "--duration", "0.5"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        s = json.loads(lines[0])
        self.assertAlmostEqual(s["data_frames"], 500, delta=120)
        self.assertEqual(s["data_bytes"], s["data_frames"] * 8 * 16 * 8)
        self.assertEqual((s["unaccounted_loss"], s["frames_announced_missing"], s["end"]), (0, 0, "durationElapsed"))

    def test_subscribe_summary_counts_every_frame_of_a_replay_that_ends_at_once(self):
        """`subscribe --summary` handles packages on the socket thread; what arrives before its run loop
        (the configuration, the first frames, here often the whole session and its close) is kept in
        order and counted: every frame, exactly, and the publisher's close as the end."""
        import numpy as np
        for frames in (1, 3, 40):
            np.save(self.path("e.npy"), np.sin(np.arange(2 * 4096 * frames).reshape(2, -1) * 0.01))
            capture = self.path(f"e{frames}.tcap")
            subprocess.run([BIN, "import", self.path("e.npy"), "--rate", "100000", "--out", capture],
                           check=True, capture_output=True, timeout=60)
            for attempt in range(3):
                proc = subprocess.Popen([BIN, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--replay", capture,
                                         "--speed", "max", "--linger", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
                try:
                    address = proc.stdout.readline().split()[-1]
                    sub = subprocess.run([BIN, "subscribe", address, "--api-key", "k", "--summary"],
                                         capture_output=True, text=True, timeout=30)
                finally:
                    proc.stdout.close()
                    proc.wait(30)
                where = f"{frames} frames, attempt {attempt + 1}"
                self.assertEqual(sub.returncode, 0, f"{where}: {sub.stderr}")
                s = json.loads(sub.stdout)
                self.assertEqual((s["data_frames"], s["data_bytes"]), (frames, frames * 2 * 4096 * 8), where)
                self.assertEqual((s["unaccounted_loss"], s["frames_announced_missing"]), (0, 0), where)
                self.assertTrue(s["end"].startswith("publisherClosed"), f"{where}: {s['end']}")

    def test_record_fast_codec_writes_a_readable_capture(self):
        serve = ServeProcess("id=1,name=s,rate=16000,channels=8,block=16")
        self.addCleanup(serve.close)
        out = self.path("fast.tcap")
        proc = subprocess.run([BIN, "record", serve.address, "--api-key", "k", "--out", out, "--duration", "0.5", "--fast-codec"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        inspect = subprocess.run([BIN, "inspect", out], capture_output=True, text=True, timeout=30)
        self.assertEqual(inspect.returncode, 0, inspect.stderr)
        self.assertIn("no gaps, no damage", inspect.stdout)
        frames = int(re.search(r"(\d+) frames", inspect.stdout).group(1))
        self.assertGreater(frames, 300, inspect.stdout)  # 0.5 s at 1000 frames/s

    def test_process_bench_latency_suite_runs(self):
        """Benchmarks/process_bench.py's quickest suite end to end (serve -> bench, LSL outlet -> inlet),
        so that the script `make bench` runs does not rot."""
        import sys
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Benchmarks", "process_bench.py")
        proc = subprocess.run([sys.executable, script, "--tributary", BIN, "--python", sys.executable, "--quick", "--only", "latency",
                               "--json", self.path("pb.json")], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertIn("1000 frames/s: tributary serve -> bench p50", proc.stdout)
        self.assertIn("LSL push_chunk -> pull_chunk p50", proc.stdout)
        with open(self.path("pb.json")) as f:
            row = json.load(f)["latency"]["1000"]
        self.assertEqual(row["tributary"][0]["unaccounted"], 0)
        self.assertGreater(row["tributary"][0]["p50"], 0)
        self.assertAlmostEqual(row["lsl"][0]["delivered"], 1000, delta=150)

    def test_bad_flags_fail_clearly(self):
        cases = [
            (["--rates", "100,fast"], "option --rates: 'fast' is not an offered rate"),
            (["--rates", "0"], "option --rates: '0' is not"),
            (["--sizes", "16,"], "option --sizes: '' is not samples per channel"),
            (["--sizes", "999999"], "option --sizes: '999999'"),
            (["--seconds", "0"], "option --seconds: '0' is not a duration in seconds in [0.1, 3600]"),
            (["--subscribers", "1000"], "option --subscribers: '1000' is not a count of subscribers in 1...256"),
            (["--json", "/nonexistent-dir/x.json"], "/nonexistent-dir/x.json: the directory /nonexistent-dir does not exist"),
            (["--svg", "/"], "/: is a directory"),
            (["--frobnicate"], "unknown option '--frobnicate'"),
            (["tcp://127.0.0.1:1"], "a publisher ADDRESS needs --api-key KEY"),
            (["tcp://127.0.0.1:1", "--api-key", "k", "--rates", "100"], "--rates, --sizes and --lossless apply to loopback runs"),
            (["tcp://127.0.0.1:1", "--api-key", "k", "--duration", "3"], "--duration: bench measures --seconds per point"),
            (["udp://127.0.0.1:1", "--api-key", "k"], "only tcp:// addresses are supported"),
            (["--api-key", "k"], "missing ADDRESS"),
            (["--start-at", "5"], "--start-at applies to runs against a publisher"),
            (["--warmup", "-1"], "option --warmup: '-1' is not a duration in seconds in [0, 3600]"),
            (["tcp://127.0.0.1:1", "--api-key", "k", "--start-at", "soon"], "option --start-at: 'soon' is not a Unix time"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                started = time.time()
                proc = bench(*args, expect=2 if "directory" not in message else 1, timeout=20)
                self.assertIn(message, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertLess(time.time() - started, 5)


if __name__ == "__main__":
    unittest.main()
