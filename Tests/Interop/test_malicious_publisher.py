"""The malicious-publisher suite (issue 38): a fake publisher written from docs/PROTOCOL.md sends
extreme and inconsistent values in every header and package field — sequence numbers, gap counts,
timestamps, sample numbers, rates, ranges, sizes, source and filter ids, configurations without
bound — to `subscribe` (text, JSON, summary), `record`, `monitor`, `view` and the Python package.

Every process ends with an error or goes on, never by a signal; `record` keeps every frame it
received before an error; the resource attacks leave every process's memory bounded. The attacks
run a few at a time, each bounded to a few seconds; the suite takes about a minute.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import malicious_publisher as mp
import wire_spec as w
from test_transport_cli import TRIBUTARY

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_VICTIM = r"""
import sys
import tributary
with tributary.subscribe(sys.argv[1], "k") as sub:
    n = 0
    for item in sub.packages(duration=3):
        n += 1
print("packages", n)
"""

# The attacks after which the session must end with an error, not go on (the rest may do either).
ENDING = {"gap-counts-overflow": False, "many-sources": True, "huge-configurations": True,
          "many-source-ids-data": True}


def peak_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def run_victim(argv, timeout=25, env=None):
    """Runs a victim to its end; returns (returncode, stdout, stderr, peak RSS in KiB)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0]

    def sample():
        while process.poll() is None:
            peak[0] = max(peak[0], peak_rss_kb(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"{argv[:2]} did not end within {timeout} s: {err[-2000:]}")
    sampler.join(timeout=1)
    return process.returncode, out, err, peak[0]


class MaliciousPublisherSuite(unittest.TestCase):
    """Each victim against every attack of malicious_publisher.scripts()."""

    @classmethod
    def setUpClass(cls):
        cls.scripts = mp.scripts()
        cls.directory = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.directory.cleanup()

    def attack_all(self, victim, check=None, wait_for_start=True):
        """Runs `victim(name, address)` -> argv against every attack, four at a time."""
        failures = []

        def one(name):
            script, sources = self.scripts[name]
            with mp.MaliciousPublisher(script, wait_for_start=wait_for_start,
                                       **({} if sources is None else {"sources": sources})) as publisher:
                argv, env = victim(name, publisher.address)
                code, out, err, peak = run_victim(argv, env=env)
            problems = []
            if code < 0 or code > 1 or "Fatal error" in err or "Backtrace" in err:
                problems.append(f"ended with status {code}: {err.strip()[-600:]}")
            if peak > 400_000:
                problems.append(f"peak RSS {peak // 1024} MiB")
            if not problems and check:
                problems += check(name, code, out, err)
            return [f"{name}: {p}" for p in problems]

        with ThreadPoolExecutor(max_workers=4) as pool:
            for result in pool.map(one, sorted(self.scripts)):
                failures += result
        self.assertEqual(failures, [], "\n".join(failures))

    def cli(self, *arguments):
        return lambda name, address: ([TRIBUTARY, arguments[0], address, "--api-key", mp.KEY, "--duration", "3",
                                       *arguments[1:]], None)

    def test_subscribe_text(self):
        self.attack_all(self.cli("subscribe"))

    def test_subscribe_json(self):
        self.attack_all(self.cli("subscribe", "--json"))

    def test_subscribe_summary(self):
        self.attack_all(self.cli("subscribe", "--summary"))

    def test_record_data_before_start(self):
        # A publisher that streams before the subscriber started it: no signal, whatever it sends.
        self.attack_all(lambda name, address: ([TRIBUTARY, "record", address, "--api-key", mp.KEY, "--duration", "3",
                                                "--out", os.path.join(self.directory.name, f"early-{abs(hash(name))}.tcap"),
                                                "--force"], None), wait_for_start=False)

    def test_monitor(self):
        self.attack_all(self.cli("monitor"))

    def test_view(self):
        self.attack_all(self.cli("view", "--http", "127.0.0.1:0"))

    def test_record_keeps_what_arrived(self):
        paths = {}

        def victim(name, address):
            paths[name] = os.path.join(self.directory.name, f"{abs(hash(name))}.tcap")
            return [TRIBUTARY, "record", address, "--api-key", mp.KEY, "--duration", "3", "--out", paths[name],
                    "--force"], None

        def check(name, code, out, err):
            # The five good frames before every attack (100 samples each) are in the capture.
            if name.startswith("config-rate-") and name != "config-rate-0.0":
                # A rate the protocol refuses, in the configuration sent with the welcome, ends the session
                # before any data (the capture, if one was opened before the error arrived, holds none).
                return [] if code == 1 and "error 10" in err else [f"status {code}, not error 10: {err.strip()[-300:]}"]
            if not os.path.exists(paths[name]):
                return [f"no capture ({err.strip()[-300:]})"]
            inspect = subprocess.run([TRIBUTARY, "inspect", "--json", paths[name]], capture_output=True, text=True, timeout=30)
            if inspect.returncode != 0:
                return [f"inspect failed: {inspect.stderr.strip()[-300:]}"]
            sources = {s["id"]: s for s in json.loads(inspect.stdout)["sources"]}
            samples = sources.get(1, {}).get("samples", 0)
            problems = [] if samples >= 500 else [f"source 1 kept {samples} samples, not the 500 received first"]
            if ENDING.get(name) and code != 1:
                problems.append(f"the session went on (status {code}); it must end with an error")
            if ENDING.get(name) and "error 11" not in err:
                problems.append(f"no error 11 said: {err.strip()[-300:]}")
            return problems

        self.attack_all(victim, check)

    def test_python_package(self):
        try:
            import tributary  # noqa: F401
        except ImportError:
            self.skipTest("the tributary Python package is not installed (make python)")
        script = os.path.join(self.directory.name, "victim.py")
        with open(script, "w") as f:
            f.write(PYTHON_VICTIM)
        self.attack_all(lambda name, address: ([sys.executable, script, address], dict(os.environ)))



class SubscriberEndsWithErrorAndClose(unittest.TestCase):
    """Issue 43 item 11: a subscriber that ends its session for a malformed frame tells the publisher
    as PROTOCOL.md §4.3 says: an error frame with code 10 and the reason, then a close with code 10."""

    def test_a_malformed_frame_is_answered_with_error_10_then_close_10(self):
        bad = mp.Step("analog", raw=lambda sequence: w.frame("analog", b"\xff" * 16, sequence=sequence, source_id=1))
        with mp.MaliciousPublisher([mp.Step("analog", mp.block()), bad], close=False) as publisher:
            result = subprocess.run([TRIBUTARY, "subscribe", publisher.address, "--api-key", mp.KEY, "--duration", "5"],
                                    capture_output=True, text=True, timeout=30)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn("error 10", result.stderr)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and w.KINDS["close"] not in publisher.received:
                time.sleep(0.05)
            sent = [(f[5], f[40:]) for f in publisher.frames if f[5] in (w.KINDS["error"], w.KINDS["close"])]
        self.assertEqual([kind for kind, _ in sent], [w.KINDS["error"], w.KINDS["close"]], sent)
        (_, error), (_, close) = sent
        self.assertEqual(struct.unpack_from("<I", error)[0], 10)
        length = struct.unpack_from("<I", error, 4)[0]
        self.assertIn("malformed", error[8:8 + length].decode())
        self.assertEqual(struct.unpack_from("<I", close)[0], 10)


if __name__ == "__main__":
    unittest.main()
