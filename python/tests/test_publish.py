"""tributary.Publisher: blocks pushed from Python, recorded by `tributary record`, exported bit for bit;
and misuse through Python (wrong shape, dtype, layout, closed source or publisher, bad arguments)."""
import os
import subprocess
import tempfile
import time
import unittest

import h5py
import numpy as np

import tributary

BIN = os.environ.get("TRIBUTARY", ".build/release/tributary")
TIMEOUT = 20


def wait_for_subscribers(pub, count=1):
    deadline = time.monotonic() + TIMEOUT
    while pub.subscribers < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {count} subscriber(s) within {TIMEOUT} s")
        time.sleep(0.01)


PUBLISHER_SCRIPT = r"""
import sys, time
import numpy as np
import tributary
with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
    src = pub.add_source(id=1, name="daq", rate=1000, channels=["ai0"], dtype="float64", lossless=True)
    print(pub.endpoint, flush=True)
    while pub.subscribers < 1:
        time.sleep(0.01)
    n = 0
    while True:  # until killed
        src.push(np.arange(n * 100, n * 100 + 100, dtype=np.float64).reshape(1, -1))
        n += 1
        print(n, flush=True)
        time.sleep(0.01)
"""


class KilledPublisher(unittest.TestCase):
    """A publishing Python process killed mid-stream (SIGKILL): the recorder is told at once that the
    connection is lost (error 5) and keeps every frame it received, in a complete capture."""

    def test_record_keeps_every_frame_received_when_the_publisher_is_killed(self):
        import signal
        import sys
        with tempfile.TemporaryDirectory() as directory:
            capture = os.path.join(directory, "killed.tcap")
            publisher = subprocess.Popen([sys.executable, "-c", PUBLISHER_SCRIPT], stdout=subprocess.PIPE, text=True)
            try:
                endpoint = publisher.stdout.readline().strip()
                self.assertTrue(endpoint.startswith("tcp://127.0.0.1:"), endpoint)
                record = subprocess.Popen([BIN, "record", endpoint, "--api-key", "k", "--out", capture],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                pushed = 0
                while pushed < 30:
                    pushed = int(publisher.stdout.readline())
                publisher.send_signal(signal.SIGKILL)
                publisher.wait(timeout=TIMEOUT)
                output, _ = record.communicate(timeout=TIMEOUT)
            finally:
                if publisher.poll() is None:
                    publisher.kill()
                publisher.wait(timeout=TIMEOUT)
                publisher.stdout.close()
            # The session ended with the connection (error 5), not a timeout; the capture was written.
            self.assertNotEqual(record.returncode, 0, output)
            self.assertIn("error 5", output)
            self.assertTrue(os.path.exists(capture), output)
            out = os.path.join(directory, "killed.npy")
            subprocess.run([BIN, "export", capture, "--format", "npy", "--out", out], check=True, capture_output=True, timeout=TIMEOUT)
            samples = np.load(out)[0]
            # Every frame received is kept, in order and contiguous from the first.
            self.assertGreaterEqual(samples.size, 10 * 100, output)
            np.testing.assert_array_equal(samples, np.arange(samples.size, dtype=np.float64))


class Int32Counts(unittest.TestCase):
    """int32 counts (24-bit delta-sigma codes) with scale and offset: pushed from Python, recorded,
    read back by tributary.open as the counts and as values, and exported with --counts as int32 that
    numpy, h5py, npTDMS and pyxdf read (wire sample format 4)."""

    def test_int32_blocks_come_back_as_counts_and_values(self):
        import pyxdf
        from nptdms import TdmsFile
        rng = np.random.default_rng(32)
        blocks = [rng.integers(-(2 ** 23), 2 ** 23, size=(2, 300), dtype=np.int32) for _ in range(4)]
        blocks[0][0, :2] = [-(2 ** 31), 2 ** 31 - 1]
        scale, offset = 2.0 ** -23 * 10, 0.25
        with tempfile.TemporaryDirectory() as directory:
            capture = os.path.join(directory, "dsa.tcap")
            with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
                dsa = pub.add_source(id=3, name="dsa", rate=51200, channels=["a", "b"], unit="V", range=(-10, 10),
                                     dtype="int32", scale=scale, offset=offset, lossless=True)
                with self.assertRaises(TypeError):
                    dsa.push(blocks[0].astype(np.int16))
                record = subprocess.Popen([BIN, "record", pub.endpoint, "--api-key", "k", "--out", capture],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                try:
                    wait_for_subscribers(pub)
                    for k, block in enumerate(blocks):
                        self.assertTrue(dsa.push(np.asfortranarray(block) if k == 1 else block))
                finally:
                    pub.close()
                    output, _ = record.communicate(timeout=TIMEOUT)
            self.assertEqual(record.returncode, 0, output)
            counts = np.hstack(blocks)
            with tributary.open(capture) as cap:
                source = cap.source(3)
                self.assertEqual(source.sample_type, "int32")
                stored = cap.read(3, counts=True)
                self.assertEqual(stored.dtype, np.int32)
                np.testing.assert_array_equal(stored, counts)
                np.testing.assert_array_equal(cap.read_raw(3, dtype=np.int32), counts)
                np.testing.assert_array_equal(cap.read(3), counts.astype(np.float64) * scale + offset)
            for fmt in ("npy", "hdf5", "tdms", "xdf"):
                out = os.path.join(directory, f"counts.{fmt}")
                subprocess.run([BIN, "export", capture, "--format", fmt, "--counts", "--out", out], check=True,
                               capture_output=True, timeout=TIMEOUT)
            self.assertEqual(np.load(os.path.join(directory, "counts.npy")).dtype, np.int32)
            np.testing.assert_array_equal(np.load(os.path.join(directory, "counts.npy")), counts)
            with h5py.File(os.path.join(directory, "counts.hdf5"), "r") as f:
                data = f[list(f)[0]]["data"]
                self.assertEqual(data.dtype, np.int32)
                np.testing.assert_array_equal(data[()], counts)
                np.testing.assert_array_equal(data.attrs["scale"], [scale, scale])
            group = TdmsFile.read(os.path.join(directory, "counts.tdms")).groups()[0]
            for row, channel in enumerate(group.channels()):
                raw = channel.read_data(scaled=False)
                self.assertEqual(raw.dtype, np.int32)
                np.testing.assert_array_equal(raw, counts[row])
                np.testing.assert_array_equal(channel[:], counts[row] * scale + offset)
            streams, _ = pyxdf.load_xdf(os.path.join(directory, "counts.xdf"))
            self.assertEqual(streams[0]["time_series"].dtype, np.int32)
            np.testing.assert_array_equal(streams[0]["time_series"].T, counts)


class RecordedBitForBit(unittest.TestCase):
    """float64 and int16 (scale/offset) blocks, channel-major and interleaved, with a given first time
    and then contiguous times, through `tributary record` and `export --format hdf5`; the int16 source
    is added after the recorder connected (its configuration reaches the open session)."""

    def test_float64_and_int16_blocks_come_back_exactly(self):
        rng = np.random.default_rng(40)
        volts = [rng.normal(0, 3, size=(2, 250)) for _ in range(6)]
        counts = [rng.integers(-32768, 32767, size=(3, 400), endpoint=True, dtype=np.int16) for _ in range(5)]
        start_ns = 1_780_000_000_123_456_789
        with tempfile.TemporaryDirectory() as directory:
            capture = os.path.join(directory, "run.tcap")
            with tributary.Publisher("tcp://127.0.0.1:0", api_key="k", description="python test") as pub:
                self.assertTrue(pub.endpoint.startswith("tcp://127.0.0.1:"))
                self.assertNotEqual(pub.endpoint, "tcp://127.0.0.1:0")
                daq = pub.add_source(id=1, name="daq", rate=1000, channels=["ai0", "ai1"], unit="V", range=(-10, 10),
                                     dtype="float64", lossless=True)
                record = subprocess.Popen([BIN, "record", pub.endpoint, "--api-key", "k", "--out", capture],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                try:
                    wait_for_subscribers(pub)
                    # Added while the recorder's session is open: it receives the configuration then.
                    adc = pub.add_source(id=7, name="adc", rate=2000, channels=["x", "y", "z"], unit="mV", range=(-40, 40),
                                         dtype="int16", scale=0.00125, offset=-0.5, lossless=True)
                    for k, block in enumerate(volts):
                        # Odd blocks go interleaved: the transpose of a C-contiguous (samples, channels) array.
                        pushed = np.ascontiguousarray(block.T).T if k % 2 else block
                        self.assertEqual(pushed.flags.c_contiguous, k % 2 == 0)
                        self.assertTrue(daq.push(pushed, time_ns=start_ns if k == 0 else None))
                    adc_start = time.time()
                    for k, block in enumerate(counts):
                        self.assertTrue(adc.push(np.asfortranarray(block) if k == 2 else block, time=adc_start if k == 0 else None))
                    self.assertTrue(pub.send_message("python test done"))
                    self.assertEqual((daq.pushed, daq.dropped, adc.pushed, adc.dropped), (6, 0, 5, 0))
                finally:
                    pub.close()
                    output, _ = record.communicate(timeout=TIMEOUT)
            self.assertEqual(record.returncode, 0, output)

            physical = os.path.join(directory, "run.h5")
            raw = os.path.join(directory, "counts.h5")
            for args in (["--out", physical], ["--counts", "--out", raw]):
                subprocess.run([BIN, "export", capture, "--format", "hdf5", *args], check=True, capture_output=True, timeout=TIMEOUT)

            with h5py.File(physical, "r") as f:
                groups = {int(f[name].attrs["source_id"]): f[name] for name in f}
                self.assertEqual(sorted(groups), [1, 7])
                daq_group, adc_group = groups[1], groups[7]
                data = daq_group["data"]
                expected = np.hstack(volts)
                self.assertEqual(data.dtype, np.float64)
                np.testing.assert_array_equal(data[()].view(np.uint64), expected.view(np.uint64))
                self.assertEqual([n.decode() if isinstance(n, bytes) else n for n in data.attrs["channel_names"]], ["ai0", "ai1"])
                self.assertEqual([u.decode() if isinstance(u, bytes) else u for u in data.attrs["units"]], ["V", "V"])
                self.assertEqual(float(daq_group.attrs["sample_rate"]), 1000.0)
                self.assertEqual(int(daq_group.attrs["start_time_ns"]), start_ns)
                # Contiguous: block k starts at start + k × 250 samples / 1000 Hz.
                np.testing.assert_array_equal(daq_group["block_start"][()], np.arange(6) * 250)
                np.testing.assert_array_equal(daq_group["block_time_ns"][()], start_ns + np.arange(6) * 250_000_000)
                self.assertEqual(str(daq_group.attrs["device_name"]), "daq")

                adc_volts = adc_group["data"][()]
                all_counts = np.hstack(counts)
                np.testing.assert_array_equal(adc_volts.view(np.uint64), (all_counts.astype(np.float64) * 0.00125 + -0.5).view(np.uint64))
                self.assertEqual(float(adc_group.attrs["sample_rate"]), 2000.0)
                adc_start_ns = int(adc_group.attrs["start_time_ns"])
                self.assertEqual(adc_start_ns, int(round(adc_start * 1e9)))
                np.testing.assert_array_equal(adc_group["block_time_ns"][()], adc_start_ns + np.arange(5) * 200_000_000)
                self.assertEqual([u.decode() if isinstance(u, bytes) else u for u in adc_group["data"].attrs["units"]], ["mV"] * 3)

            with h5py.File(raw, "r") as f:
                adc_group = next(f[name] for name in f if int(f[name].attrs["source_id"]) == 7)
                stored = adc_group["data"]
                self.assertEqual(stored.dtype, np.int16)
                np.testing.assert_array_equal(stored[()], np.hstack(counts))
                np.testing.assert_array_equal(stored.attrs["scale"], [0.00125] * 3)
                np.testing.assert_array_equal(stored.attrs["offset"], [-0.5] * 3)
                self.assertEqual([n.decode() if isinstance(n, bytes) else n for n in stored.attrs["channel_names"]], ["x", "y", "z"])

            # The message arrived too (source 0, the publisher's own).
            with tributary.open(capture) as cap:
                texts = [p.content.get("text") for p in cap.packages() if p.kind == "message"]
            self.assertEqual(texts, ["python test done"])


class Misuse(unittest.TestCase):
    """Every mistake is an exception naming it, never a crash or a silent copy."""

    def setUp(self):
        self.pub = tributary.Publisher("tcp://127.0.0.1:0", api_key="k")
        self.source = self.pub.add_source(id=1, name="daq", rate=1000, channels=["a", "b"], dtype="float64")

    def tearDown(self):
        self.pub.close()

    def test_blocks_that_do_not_fit(self):
        cases = [
            (np.zeros((3, 10)), ValueError, "source 1 has 2 channels"),
            (np.zeros(10), ValueError, "2-dimensional"),
            (np.zeros((2, 0)), ValueError, "no samples"),
            (np.zeros((2, 10), dtype=np.float32), TypeError, "dtype is <f4"),
            (np.zeros((2, 10), dtype=">f8"), TypeError, "dtype is >f8"),
            (np.zeros((2, 20))[:, ::2], ValueError, "neither C- nor F-contiguous"),
            ([[0.0] * 10] * 2, TypeError, "numpy ndarray"),
        ]
        for block, error, words in cases:
            with self.subTest(block=getattr(block, "shape", block)):
                with self.assertRaisesRegex(error, words):
                    self.source.push(block)
        self.assertEqual(self.source.pushed, 0)

    def test_arguments_checked(self):
        with self.assertRaisesRegex(TypeError, "time or time_ns"):
            self.source.push(np.zeros((2, 4)), time=1.0, time_ns=1)
        with self.assertRaisesRegex(ValueError, "timeout"):
            self.source.push(np.zeros((2, 4)), timeout=-1)
        with self.assertRaisesRegex(tributary.ArgumentError, "timeout_seconds"):
            self.source.push(np.zeros((2, 4)), timeout=1e9)
        with self.assertRaisesRegex(ValueError, "time_ns"):
            self.source.push(np.zeros((2, 4)), time_ns=2**63)

    def test_argument_forms(self):
        """The push's quick checks of the usual forms (int time_ns, float or int timeout) accept and
        refuse what the full checks do."""
        block = np.zeros((2, 4))
        accepted = [dict(time_ns=1_700_000_000_000_000_000), dict(time_ns=np.int64(1_700_000_000_000_000_000)),
                    dict(time_ns=-(2**63) + 1), dict(time_ns=2**63 - 1), dict(time=1.7e9), dict(time=np.float32(1.7e9)),
                    dict(timeout=0), dict(timeout=5), dict(timeout=0.0), dict(timeout=np.float64(2.5)),
                    dict(timeout=np.int32(3)), dict()]
        for kwargs in accepted:
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}):
                self.assertTrue(self.source.push(block, **kwargs))
        refused = [(dict(time_ns=True), TypeError, "time_ns must be an integer, not a bool"),
                   (dict(time_ns=-(2**63)), ValueError, "time_ns"), (dict(time_ns=1.5e18), TypeError, "time_ns"),
                   (dict(time_ns="1"), TypeError, "time_ns"), (dict(timeout=float("nan")), ValueError, "timeout"),
                   (dict(timeout=float("inf")), ValueError, "timeout"), (dict(timeout=-0.5), ValueError, "timeout"),
                   (dict(timeout=True), TypeError, "timeout"), (dict(timeout=None), TypeError, "timeout"),
                   (dict(time=float("nan")), ValueError, "time")]
        for kwargs, error, words in refused:
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}):
                with self.assertRaisesRegex(error, words):
                    self.source.push(block, **kwargs)
        # A subclass of ndarray is an ndarray; F-contiguous goes as interleaved.
        self.assertTrue(self.source.push(np.zeros((2, 4)).view(np.matrix)))
        self.assertTrue(self.source.push(np.asfortranarray(np.zeros((2, 4)))))
        self.assertEqual(self.source.pushed, len(accepted) + 2)

    def test_sources_refused(self):
        with self.assertRaisesRegex(tributary.ArgumentError, "already used"):
            self.pub.add_source(id=1, name="again", rate=10, channels=1)
        with self.assertRaisesRegex(ValueError, "id must be an integer from 1"):
            self.pub.add_source(id=0, name="zero", rate=10, channels=1)
        with self.assertRaisesRegex(tributary.ArgumentError, "sample rate 0.0 Hz"):
            self.pub.add_source(id=2, name="x", rate=0, channels=1)
        with self.assertRaisesRegex(ValueError, "finite"):
            self.pub.add_source(id=2, name="x", rate=float("nan"), channels=1)
        with self.assertRaisesRegex(TypeError, "dtype must be float64, float32, int16 or int32"):
            self.pub.add_source(id=2, name="x", rate=10, channels=1, dtype="int64")
        with self.assertRaisesRegex(tributary.ArgumentError, "scale and offset apply to int16"):
            self.pub.add_source(id=2, name="x", rate=10, channels=1, scale=2.0)
        with self.assertRaisesRegex(tributary.ArgumentError, "non-zero scale"):
            self.pub.add_source(id=2, name="x", rate=10, channels=1, dtype="int16", scale=0.0)
        with self.assertRaisesRegex(tributary.ArgumentError, "range"):
            self.pub.add_source(id=2, name="x", rate=10, channels=1, range=(5, -5))
        with self.assertRaisesRegex(ValueError, "commas"):
            self.pub.add_source(id=2, name="x", rate=10, channels=["a,b"])
        with self.assertRaisesRegex(ValueError, "1 to 65535 channels"):
            self.pub.add_source(id=2, name="x", rate=10, channels=[])
        with self.assertRaisesRegex(ValueError, "channels must be an integer from 1 to 65535"):
            self.pub.add_source(id=2, name="x", rate=10, channels=70000)
        with self.assertRaisesRegex(TypeError, "lossless must be True or False"):
            self.pub.add_source(id=2, name="x", rate=10, channels=1, lossless="yes")
        # None of these was added: id 2 is still free.
        self.pub.add_source(id=2, name="x", rate=10, channels=1)

    def test_types_checked(self):
        with self.assertRaisesRegex(TypeError, "bind must be a string"):
            tributary.Publisher(5555, api_key="k")
        with self.assertRaisesRegex(tributary.ArgumentError, "api_key is empty"):
            tributary.Publisher("tcp://127.0.0.1:0", api_key="")
        with self.assertRaisesRegex(tributary.CaptureIOError, "cannot publish"):
            tributary.Publisher("tcp://256.1.1.1:0", api_key="k")
        with self.assertRaisesRegex(TypeError, "text must be a string"):
            self.pub.send_message(b"bytes")

    def test_closed_source_and_publisher(self):
        self.source.close()
        with self.assertRaisesRegex(tributary.HandleError, "source 1 is closed"):
            self.source.push(np.zeros((2, 4)))
        other = self.pub.add_source(id=3, name="other", rate=10, channels=2)
        self.assertTrue(other.push(np.zeros((2, 4))))
        self.pub.close()
        with self.assertRaises(tributary.HandleError):
            other.push(np.zeros((2, 4)))
        with self.assertRaisesRegex(tributary.HandleError, "publisher is closed"):
            self.pub.add_source(id=4, name="late", rate=10, channels=1)
        with self.assertRaisesRegex(tributary.HandleError, "publisher is closed"):
            self.pub.send_message("late")
        with self.assertRaises(tributary.HandleError):
            self.pub.subscribers

    def test_lossless_push_times_out_on_a_stalled_subscriber(self):
        source = self.pub.add_source(id=5, name="lossless", rate=1e6, channels=8, lossless=True)
        # A subscriber that takes one package and then never pulls: its socket stops being read, its
        # credit stops, and a lossless source must not wait longer than its timeout.
        with tributary.subscribe(self.pub.endpoint, api_key="k", sources=[5], capacity=1) as stalled:
            wait_for_subscribers(self.pub)
            block = np.zeros((8, 8192))
            started = time.monotonic()
            with self.assertRaises(tributary.QueueFullError):
                for _ in range(2000):
                    source.push(block, timeout=0.2)
            self.assertLess(time.monotonic() - started, TIMEOUT)
            self.assertIsNotNone(stalled)


if __name__ == "__main__":
    unittest.main()


class Properties(unittest.TestCase):
    """Free-form properties given to add_source reach a recording (`tributary record`) and come back
    as Source.properties / Channel.properties of a Capture; bad ones are refused before the source is added."""

    def test_properties_are_recorded_and_read_back(self):
        with tempfile.TemporaryDirectory() as directory:
            capture = os.path.join(directory, "p.tcap")
            with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
                src = pub.add_source(id=5, name="daq", rate=1000, channels=["ai0", "ai1", "ai2"], lossless=True,
                                     properties={"serial": "SN-7", "subject": "S01 ü"},
                                     channel_properties=[{"gain": "2"}, None, {"sensor": "x=y"}])
                record = subprocess.Popen([BIN, "record", pub.endpoint, "--api-key", "k", "--out", capture],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                wait_for_subscribers(pub)
                for _ in range(3):
                    src.push(np.zeros((3, 50)))
            out, _ = record.communicate(timeout=TIMEOUT)
            self.assertEqual(record.returncode, 0, out)
            with tributary.Capture(capture) as cap:
                source = next(s for s in cap.sources if s.id == 5)
                self.assertEqual(source.properties, {"serial": "SN-7", "subject": "S01 ü"})
                self.assertEqual(list(source.properties), ["serial", "subject"])
                self.assertEqual([c.properties for c in source.channels], [{"gain": "2"}, {}, {"sensor": "x=y"}])

    def test_bad_properties_are_refused(self):
        with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
            cases = [
                ({"properties": {"k" * 257: "v"}}, tributary.ArgumentError, "keys have 1 to 256"),
                ({"properties": {"k": "v" * 16385}}, tributary.ArgumentError, "at most 16384"),
                ({"properties": {"": "v"}}, ValueError, "non-empty"),
                ({"properties": {"a": "line\nbreak"}}, ValueError, "line breaks"),
                ({"properties": {"3:x": "v"}}, ValueError, "channel"),
                ({"properties": {"a": 1}}, TypeError, "must be str"),
                ({"channel_properties": [{"a": "b"}]}, ValueError, "one per channel"),
            ]
            for kwargs, error, message in cases:
                with self.assertRaises(error, msg=str(kwargs)[:60]) as caught:
                    pub.add_source(id=9, name="x", rate=10, channels=2, **kwargs)
                self.assertIn(message, str(caught.exception))
            # Nothing was left behind: the same id takes a source without properties.
            pub.add_source(id=9, name="x", rate=10, channels=2)

    def test_the_c_setter_checks_its_arguments(self):
        from tributary import _native, publisher
        lib = publisher._library()
        with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
            for source_id, text, message in [(1, None, "properties is NULL"), (0, b"a=b", "source_id 0"),
                                             (1, b"no equals sign", "no '='"), (1, b"=v", "an empty key"),
                                             (1, b"70000:k=v", "not in 0...65534")]:
                status = lib.tributary_publisher_set_properties(pub._handle, source_id, text)
                self.assertEqual(status, _native.E_ARGUMENT, text)
                self.assertIn(message, (_native.lib().tributary_last_error() or b"").decode())
            # A channel the source does not have: refused when the source is added, and used up.
            self.assertEqual(lib.tributary_publisher_set_properties(pub._handle, 3, b"5:k=v\r\nserial=1"), 0)
            with self.assertRaises(tributary.ArgumentError) as caught:
                pub.add_source(id=3, name="x", rate=10, channels=2)
            self.assertIn("properties of channel 5", str(caught.exception))
            pub.add_source(id=3, name="x", rate=10, channels=2)
