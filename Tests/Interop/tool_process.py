"""A `tributary` command running beside an interop test, and `serve` started on 127.0.0.1.

Threads collect its stdout and stderr lines (the pipes never fill), so a test waits for a line
with a deadline instead of blocking on the pipe. Not a test module: the tests import it.
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

# The binary under test: $TRIBUTARY (`make interop-tests` sets it), else the release build of the
# checkout these tests are in, wherever they are run from.
TRIBUTARY = os.environ.get("TRIBUTARY") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".build", "release", "tributary")
TIMEOUT = 20  # seconds any one command or wait may take


class ToolProcess:
    """`tributary ARGS…`; its stdout lines are taken with `wait_for`, its stderr lines kept in `errors`."""

    def __init__(self, *args, stdin=None, env=None):
        self.name = str(args[0])
        self.process = subprocess.Popen([TRIBUTARY, *map(str, args)], stdin=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.seen = []
        self.errors = []
        self.readers = [threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put), daemon=True),
                        threading.Thread(target=self._read, args=(self.process.stderr, self.errors.append), daemon=True)]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, put):
        with stream:
            for line in stream:
                put(line)

    def wait_for(self, prefix, timeout=TIMEOUT):
        """The next line (after those already taken) that starts with `prefix`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"{self.name} printed no line starting with {prefix!r}; saw {self.seen}, "
                             f"stderr {self.errors}")

    def value_after(self, prefix, timeout=TIMEOUT):
        """What follows `prefix` on the next line that starts with it, without surrounding blanks."""
        return self.wait_for(prefix, timeout).split(prefix, 1)[1].strip()

    def stop(self, how=signal.SIGTERM, kill_if_hung=False):
        """Sends `how` unless it has ended and waits for it (raising if it does not end in TIMEOUT,
        unless `kill_if_hung`: then it is killed); returns its stderr."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                if not kill_if_hung:
                    raise
                self.process.kill()
                self.process.wait(timeout=TIMEOUT)
        for reader in self.readers:
            reader.join(timeout=TIMEOUT)
        if self.process.stdin:
            self.process.stdin.close()
        return "".join(self.errors)


class Serve(ToolProcess):
    """`tributary serve --bind BIND --api-key KEY ARGS…`, started: `address` is the one it printed
    ("listening on …"), `port` its port (bind port 0 for a free one)."""

    def __init__(self, *args, bind="tcp://127.0.0.1:0", api_key="k", stdin=None, env=None):
        super().__init__("serve", "--bind", bind, "--api-key", api_key, *args, stdin=stdin, env=env)
        self.address = self.value_after("listening on ")
        self.port = int(self.address.rsplit(":", 1)[1])


def stop_wrapped(wrapper, timeout=TIMEOUT):
    """Stops a process started through a wrapper (faketime, unshare): SIGTERM to the wrapper's
    children (the wrapper itself may not pass signals on), SIGKILL to those still there after
    `timeout`, then waits for the wrapper and closes its standard output."""
    try:
        with open(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children") as f:
            children = [int(p) for p in f.read().split()]
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        wrapper.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wrapper.wait(timeout=timeout)
    if wrapper.stdout:
        wrapper.stdout.close()


def network_namespaces_unusable():
    """Why this machine cannot make network namespaces for a test (not root, no `ip`, `ip netns add`
    refused), or None when it can: it makes and removes one to find out."""
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN (CI runs as root)"
    ip = shutil.which("ip")
    if ip is None:
        return "no 'ip' command (iproute2) to make network namespaces"
    name = f"trb-probe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run([ip, "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        return f"'ip netns add' failed: {made.stderr.strip()}"
    subprocess.run([ip, "netns", "del", name], capture_output=True)
    return None


def tool(*args, expect=0, env=None, timeout=120):
    """Runs `tributary ARGS…` to its end; an AssertionError (with its stderr) unless it exits with
    `expect`."""
    result = subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    if result.returncode != expect:
        raise AssertionError(f"tributary {' '.join(map(str, args))}: exit {result.returncode} (expected {expect}): "
                             f"{result.stderr}")
    return result


def import_noisy_tones(npy, capture, samples, rate, seed):
    """Saves three channels of `samples` samples at `rate` to `npy` (tones at 50, 400 and 3000 Hz,
    phases 0, 1 and 2 rad, plus normal noise of σ 0.3 from `seed`), imports them into `capture`
    starting at 2025-11-30 08:00 UTC, and returns them."""
    import numpy as np

    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    x = np.stack([np.sin(2 * np.pi * f * t + k) + 0.3 * rng.normal(size=t.size) for k, f in enumerate([50.0, 400.0, 3000.0])])
    np.save(npy, x)
    tool("import", npy, "--rate", rate, "--out", capture, "--start-time", "1764489600")
    return x


def sample_times(capture, source, csv_path):
    """Every sample time of `source` in `capture` in seconds since 1970: its first sample's time (from
    `inspect`, exact to the nanosecond) plus the times since it that `export --format csv
    --time-column` writes (each frame's time + k / rate)."""
    import re

    import numpy as np

    info = tool("inspect", capture).stdout
    start = re.search(rf'^source {source} ".*\n  start: .*, (-?\d+) ns\)$', info, re.MULTILINE)
    if start is None:
        raise AssertionError(f"no start time of source {source} in: {info}")
    tool("export", capture, "--format", "csv", "--time-column", "--source", source, "--out", csv_path, "--force")
    since = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=0, ndmin=1)
    return int(start.group(1)) / 1e9 + since


def analyze_json(*args):
    """`tributary analyze ARGS… --json`: one object a line."""
    out = tool("analyze", *args, "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


class ScratchDirectory:
    """A mixin for unittest.TestCase classes whose tests share files: `directory`, made by setUpClass
    (subclasses call super().setUpClass() first) and removed by tearDownClass, and `path(name)` in it."""

    directory_prefix = "tributary-test-"

    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.mkdtemp(prefix=cls.directory_prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory, ignore_errors=True)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.directory, name)


class ScratchTest:
    """A mixin for unittest.TestCase classes whose tests each want a scratch directory: `directory`,
    made by setUp (subclasses call super().setUp() first) and removed by tearDown, and `path(name)`."""

    directory_prefix = "tributary-test-"

    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix=self.directory_prefix)

    def tearDown(self):
        shutil.rmtree(self.directory, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.directory, name)


class RecordedSourceTest(ScratchTest):
    """A mixin for unittest.TestCase classes that test one kind of `serve` source end to end: a scratch
    directory, the tool run with the test's environment (`env`), `serve` recorded by a real `record`
    until its source ends, and the recording exported to NPY."""

    env = None
    directory_prefix = "tributary-source-"

    def run_tool(self, *args):
        return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=60, env=self.env)

    def record_until_the_source_ends(self, serve, capture, feed=None):
        """Records `serve` into `capture` with `record`, calls `feed` (which gives the source its data),
        and waits for serve to end by itself (exit status 0); returns serve's stdout lines, its stderr
        and record's result."""
        recorder = {}
        thread = threading.Thread(target=lambda: recorder.update(result=self.run_tool("record", serve.address, "--api-key", "k", "--out", capture)))
        thread.start()
        try:
            if feed:
                feed()
            serve.process.wait(timeout=TIMEOUT)
        finally:
            thread.join(timeout=60)
            errors = serve.stop(kill_if_hung=True)
        self.assertEqual(serve.process.returncode, 0, errors)
        out = []
        while not serve.lines.empty():
            out.append(serve.lines.get())
        return serve.seen + out, errors, recorder["result"]

    def export(self, capture, *options):
        """`export CAPTURE --format npy OPTIONS` into the scratch directory, loaded."""
        import numpy as np

        out = self.path("out.npy")
        if os.path.exists(out):
            os.remove(out)
        result = self.run_tool("export", capture, "--format", "npy", "--out", out, *options)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(out)

    def assert_values_and_counts(self, capture, counts, scale):
        """The capture exports counts × scale as float64, and with --counts `counts` bit for bit in
        their own type (the sidecar out.npy.json is then the --counts export's)."""
        import numpy as np

        got = self.export(capture)
        self.assertEqual(got.dtype, np.float64)
        np.testing.assert_array_equal(got, counts.astype(np.float64) * scale)
        stored = self.export(capture, "--counts")
        self.assertEqual(stored.dtype, counts.dtype)
        np.testing.assert_array_equal(stored, counts)

    def assert_counts_recorded(self, capture, counts, rate, name, scale, offset, unit):
        """The capture exports `counts` (channels × samples, int16) bit for bit with --counts, its
        sidecar names the rate, device, scale, offset and unit, and its values are counts × scale + offset."""
        import numpy as np

        got = self.export(capture, "--counts")
        self.assertEqual(got.dtype, np.int16)
        np.testing.assert_array_equal(got, counts)
        with open(self.path("out.npy.json")) as f:
            sidecar = json.load(f)
        channels = len(counts)
        self.assertEqual((sidecar["sample_rate"], sidecar["device_name"]), (rate, name))
        self.assertEqual((sidecar["scale"], sidecar["offset"], sidecar["units"]), ([scale] * channels, [offset] * channels, [unit] * channels))
        np.testing.assert_array_equal(self.export(capture), counts.astype(np.float64) * scale + offset)
