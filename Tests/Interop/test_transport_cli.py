"""`tributary serve`, `subscribe` and `record` as real processes on 127.0.0.1.

Every process has a timeout and is killed on teardown; the publisher binds port 0 and the tests read
the port it prints. Checks: filters and source selection over the wire, SCCT errors as exit status
and text, recordings that `inspect` and `export` read (numpy finds the simulated frequencies), a
replay at full speed that reproduces every recorded frame bit for bit, and a killed publisher.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np

from tool_process import TRIBUTARY, Serve

TIMEOUT = 20  # seconds any one command may take

# Two simulated devices: source 1 at 1 kS/s (channel k at 50 (k+1) Hz), source 2 at 2 kS/s, 16-bit.
DEVICE_1 = "id=1,name=USB-6009,rate=1000,channels=4,freq=50,amp=1,noise=0.01,block=100"
DEVICE_2 = "id=2,name=PCI-6024,rate=2000,channels=2,freq=10,amp=2,noise=0.01,bits=16"


class Server(Serve):
    """A `tributary serve` on 127.0.0.1 (API key "k") whose output lines are collected by threads;
    `stop` kills it."""

    def stop(self):
        return super().stop(signal.SIGKILL)


def run(*args, timeout=TIMEOUT):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def dominant_frequency(samples, rate):
    spectrum = np.abs(np.fft.rfft(samples - np.mean(samples)))
    return np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))]


class TransportCommandTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix="tributary-cli-")
        cls.server = Server("--simulate", DEVICE_1, "--simulate", DEVICE_2)
        # One recording shared by the record, export and replay tests.
        cls.capture = os.path.join(cls.directory, "live.tcap")
        cls.recorded = run("record", f"127.0.0.1:{cls.server.port}", "--api-key", "k", "--out", cls.capture, "--duration", 2)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.directory, ignore_errors=True)

    def setUp(self):
        self.processes = []

    def tearDown(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=TIMEOUT)
            for stream in (process.stdout, process.stderr):
                if stream:
                    stream.close()

    def path(self, name):
        return os.path.join(self.directory, name)

    def export(self, capture, source, name, *options):
        out = self.path(name)
        result = run("export", capture, "--format", "npy", "--source", source, *options, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(out)

    def test_subscribe_receives_only_the_filtered_channels_of_the_selected_source(self):
        result = run("subscribe", self.server.address, "--api-key", "k", "--channels", "1,3", "--sources", "1",
                     "--json", "--duration", 1.5)
        self.assertEqual(result.returncode, 0, result.stderr)
        packages = [json.loads(line) for line in result.stdout.splitlines()]
        analog = [p for p in packages if p["kind"] == "analog"]
        self.assertGreaterEqual(len(analog), 8, result.stdout[:500])
        self.assertTrue(all(p["source_id"] == 1 and p["filter_id"] == 1 for p in analog))
        self.assertTrue(all(p["content"]["channel_indexes"] == [1, 3] for p in analog))
        # Consecutive blocks, no gap: the sample stream is continuous.
        firsts = [p["content"]["first_sample"] for p in analog]
        self.assertEqual(firsts, list(range(firsts[0], firsts[0] + 100 * len(firsts), 100)))
        rows = np.concatenate([np.array(p["content"]["samples"]) for p in analog], axis=1)
        # Channel k carries freq x (k+1): 100 Hz and 200 Hz; bins of 1000 / n Hz.
        resolution = 1000 / rows.shape[1]
        self.assertLessEqual(abs(dominant_frequency(rows[0], 1000) - 100), resolution)
        self.assertLessEqual(abs(dominant_frequency(rows[1], 1000) - 200), resolution)
        configurations = {p["source_id"] for p in packages if p["kind"] == "configuration"}
        self.assertEqual(configurations, {1, 2})

    def test_a_wrong_api_key_is_error_1_and_a_non_zero_exit(self):
        result = run("subscribe", f"tcp://127.0.0.1:{self.server.port}", "--api-key", "wrong", "--duration", 1)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("error 1 (wrong API key)", result.stderr)
        self.assertEqual(result.stdout, "")
        # Argument errors of SCCT: an empty address is 8, a port out of range 9.
        empty = run("subscribe", ":5000", "--api-key", "k")
        self.assertIn("error 8 (empty address)", empty.stderr)
        port = run("subscribe", "127.0.0.1:70000", "--api-key", "k")
        self.assertIn("error 9 (wrong port)", port.stderr)
        self.assertNotEqual(port.returncode, 0)

    def test_record_writes_a_capture_that_inspect_and_export_read(self):
        self.assertEqual(self.recorded.returncode, 0, self.recorded.stderr)
        self.assertIn("recorded", self.recorded.stderr)
        self.assertFalse(os.path.exists(self.capture + ".partial"))
        description = json.loads(run("inspect", self.capture, "--json").stdout)
        self.assertTrue(description["footer"])
        self.assertEqual([s["id"] for s in description["sources"]], [1, 2])
        self.assertEqual(description["gaps"], [])
        first = self.export(self.capture, 1, "live-1.npy")
        self.assertEqual(first.dtype, np.float64)
        self.assertEqual(first.shape[0], 4)
        self.assertGreaterEqual(first.shape[1], 1500)  # ~2 s at 1 kS/s
        resolution = 1000 / first.shape[1]
        for k in range(4):
            self.assertLessEqual(abs(dominant_frequency(first[k], 1000) - 50 * (k + 1)), resolution, f"channel {k}")
        second = self.export(self.capture, 2, "live-2.npy", "--counts")
        self.assertEqual(second.dtype, np.int16)  # bits=16: ADC counts as received (export gives volts unless --counts)
        self.assertLessEqual(abs(dominant_frequency(second[1].astype(float), 2000) - 20), 2000 / second.shape[1])

    def test_replay_at_full_speed_reproduces_every_recorded_frame(self):
        # Decoded while replaying, and preloaded into memory first (`--preload`): the same frames.
        for preload in ([], ["--preload"]):
            with self.subTest(preload=preload):
                self.check_full_speed_replay(preload)

    def check_full_speed_replay(self, preload):
        replay = Server("--replay", self.capture, "--speed", "max", "--linger", "0.5", *preload)
        try:
            again = self.path(f"replayed{'-preloaded' if preload else ''}.tcap")
            result = run("record", replay.address, "--api-key", "k", "--out", again)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("the replay has ended", result.stderr)
            # The summary's data pace: over the time from the first data frame to the capture
            # written and synced, within the session's whole time.
            summary = re.search(r"recorded .*, ([0-9.]+) s, [0-9.]+ MB on disk; data recorded at ([0-9.]+) MB/s "
                                r"\(([0-9.]+) s from the first data frame to the capture written and synced\)", result.stderr)
            self.assertIsNotNone(summary, result.stderr)
            session, pace, seconds = map(float, summary.groups())
            self.assertTrue(0 < seconds <= session and pace > 0, summary.group(0))
            replay.process.wait(timeout=TIMEOUT)
            self.assertEqual(replay.process.returncode, 0)
        finally:
            errors = replay.stop()
        preloaded = [line for line in errors.splitlines() if line.startswith("preloaded ")]
        self.assertEqual(len(preloaded), 1 if preload else 0, errors)
        for source in (1, 2):
            tag = "-preloaded" if preload else ""
            original = self.export(self.capture, source, f"original{tag}-{source}.npy")
            replayed = self.export(again, source, f"replayed{tag}-{source}.npy")
            self.assertEqual(original.dtype, replayed.dtype)
            self.assertEqual(original.tobytes(), replayed.tobytes(), f"source {source}")
        # Frame by frame: same count, timestamps and first samples, every data frame flagged replayed.
        live = json.loads(run("inspect", self.capture, "--json").stdout)["sources"]
        back = json.loads(run("inspect", again, "--json").stdout)["sources"]
        # (The configuration frame is the replay session's own, sent at the welcome: its time differs.)
        self.assertEqual([s["id"] for s in back], [1, 2])
        for a, b in zip(live, back):
            self.assertEqual((a["id"], a["frames"], a["samples"], a["last_time_ns"]),
                             (b["id"], b["frames"], b["samples"], b["last_time_ns"]))

    def test_a_simulation_the_machine_cannot_compute_in_real_time_is_reported(self):
        # 100 million samples a second (the most a spec may ask), each of 41 sines (40 harmonics), each
        # sine a phasor step of about 0.5 ns: some 20 s of work a second, far more than one thread
        # computes on any machine.
        server = Server("--simulate", "id=7,name=too fast,rate=10000000,channels=10,block=10000,noise=0,"
                                      "harmonics=" + ";".join(["0.01"] * 40))
        try:
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline and not any("behind real time" in line for line in server.errors):
                time.sleep(0.1)
        finally:
            errors = server.stop()
        warning = [line for line in errors.splitlines() if "behind real time" in line]
        self.assertEqual(len(warning), 1, errors)
        self.assertIn("source 7 'too fast'", warning[0])
        self.assertIn("10 channels × 10000000 samples/s", warning[0])

    def test_preload_needs_a_replay(self):
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", DEVICE_1, "--preload")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--preload needs --replay", result.stderr)

    def test_replayed_frames_are_flagged_and_keep_their_recorded_time(self):
        replay = Server("--replay", self.capture, "--speed", "max", "--linger", "0.2")
        try:
            result = run("subscribe", replay.address, "--api-key", "k", "--json", "--sources", "2")
            self.assertEqual(result.returncode, 0, result.stderr)
        finally:
            replay.stop()
        analog = [json.loads(line) for line in result.stdout.splitlines()]
        analog = [p for p in analog if p["kind"] == "analog"]
        self.assertTrue(analog)
        self.assertTrue(all(p["flags"] & 0x100 and p["source_id"] == 2 for p in analog))
        recorded = json.loads(run("inspect", self.capture, "--json").stdout)["sources"][1]
        self.assertEqual(sum(p["content"]["sample_count"] for p in analog), recorded["samples"])
        # Recorded times: the last frame's is the capture's last, and blocks of 200 samples at 2 kS/s
        # are 100 ms apart (the simulator stamps each block from its sample index, within 1 ns).
        self.assertEqual(analog[-1]["timestamp_ns"], recorded["last_time_ns"])
        firsts = [p["content"]["first_sample"] for p in analog]
        self.assertEqual(firsts, list(range(firsts[0], firsts[0] + 200 * len(firsts), 200)))
        steps = np.diff([p["timestamp_ns"] for p in analog])
        self.assertTrue(np.all(np.abs(steps - 100_000_000) <= 1), steps)

    def test_sigint_closes_the_capture_cleanly(self):
        out = self.path("interrupted.tcap")
        process = subprocess.Popen([TRIBUTARY, "record", self.server.address, "--api-key", "k", "--out", out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.processes.append(process)
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(out + ".partial") and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.8)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
        self.assertEqual(process.returncode, 0, stderr)
        self.assertTrue(json.loads(run("inspect", out, "--json").stdout)["footer"])

    def test_a_killed_publisher_is_error_5_and_a_terminated_one_a_normal_end(self):
        for how in ("kill", "terminate"):
            server = Server("--simulate", DEVICE_1)
            try:
                process = subprocess.Popen([TRIBUTARY, "subscribe", server.address, "--api-key", "k"],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.processes.append(process)
                self.assertTrue(process.stdout.readline().startswith("configuration"))
                getattr(server.process, how)()
                server.process.wait(timeout=TIMEOUT)
                _, stderr = process.communicate(timeout=TIMEOUT)
            finally:
                server.stop()
            if how == "kill":
                self.assertNotEqual(process.returncode, 0)
                self.assertIn("error 5 (lost connection)", stderr)
            else:
                self.assertEqual(process.returncode, 0, stderr)
                self.assertIn("the publisher closed the session", stderr)

    def test_curve_admits_the_listed_client_keys_only(self):
        for name in ("server", "client", "other"):
            self.assertEqual(run("keygen", "--out", self.path(name)).returncode, 0)
        allowed = self.path("allowed.txt")
        with open(self.path("client.pub"), encoding="utf-8") as source, open(allowed, "w", encoding="utf-8") as out:
            out.writelines(line for line in source if not line.startswith("#"))
        server = Server("--simulate", DEVICE_1, "--curve-secret", self.path("server.key"), "--curve-clients", allowed)
        try:
            good = run("subscribe", server.address, "--api-key", "k", "--curve-server-key", self.path("server.pub"),
                       "--curve-key", self.path("client.key"), "--duration", 0.5)
            self.assertEqual(good.returncode, 0, good.stderr)
            self.assertIn("analog", good.stdout)
            other = run("subscribe", server.address, "--api-key", "k", "--curve-server-key", self.path("server.pub"),
                        "--curve-key", self.path("other.key"), "--timeout", 2)
            self.assertNotEqual(other.returncode, 0)
            self.assertIn("error 1 (wrong API key)", other.stderr)
            self.assertEqual(other.stdout, "")
        finally:
            server.stop()
        # CURVE without a client policy is refused before anything listens.
        refused = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--curve-secret", self.path("server.key"))
        self.assertEqual(refused.returncode, 2)

    def test_help_and_usage_errors(self):
        for command in ("serve", "subscribe", "record"):
            result = run(command, "--help")
            self.assertEqual(result.returncode, 0)
            self.assertIn(f"usage: tributary {command}", result.stdout)
        self.assertEqual(run("serve", "--api-key", "k").returncode, 2)
        self.assertIn("unknown key 'frq'", run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k",
                                               "--simulate", "id=1,frq=5").stderr)
        self.assertEqual(run("record", "127.0.0.1:1", "--api-key", "k").returncode, 2)  # no --out
        self.assertEqual(run("subscribe", "127.0.0.1:1", "--api-key", "k", "--channels", "3-1").returncode, 2)

    def test_receive_buffer_sizes_and_auto_stream_and_bad_ones_are_usage_errors(self):
        for command in ("subscribe", "record"):
            for value in ("12", "4095", "1073741825", "-1", "nan", "big", ""):
                with self.subTest(command=command, value=value):
                    extra = ("--out", self.path("never.tcap")) if command == "record" else ()
                    result = run(command, f"127.0.0.1:{self.server.port}", "--api-key", "k", *extra, "--receive-buffer", value)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertIn("--receive-buffer", result.stderr)
            self.assertFalse(os.path.exists(self.path("never.tcap")))
        for value in ("65536", "auto"):
            with self.subTest(value=value):
                result = run("subscribe", f"127.0.0.1:{self.server.port}", "--api-key", "k", "--summary", "--duration", 1,
                             "--receive-buffer", value)
                self.assertEqual(result.returncode, 0, result.stderr)
                summary = json.loads(result.stdout)
                self.assertGreater(summary["data_frames"], 0)
                self.assertEqual(summary["unaccounted_loss"], 0)


if __name__ == "__main__":
    unittest.main()
