"""tributary.batch.analyze_many on a Dask LocalCluster with 2 worker processes, on local processes
and in-process: the same table, and a broken file lands in the failures. About 20-40 s."""
import os
import tempfile
import unittest
import warnings

import numpy as np
import pandas as pd

import tributary
from tributary import batch

BIN = os.environ.get("TRIBUTARY", ".build/release/tributary")


class BatchTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import subprocess

        cls.tmp = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(3)
        cls.paths = []
        for i in range(5):
            t = np.arange(8192) / 8000.0
            array = np.vstack([np.sin(2 * np.pi * (100 + 50 * i) * t) + rng.normal(0, 0.01, t.size),
                               rng.normal(0, 1 + i, t.size)])
            npy = os.path.join(cls.tmp.name, f"run{i}.npy")
            np.save(npy, array)
            if i % 2 == 0:  # captures and NPY files mixed
                tcap = npy.replace(".npy", ".tcap")
                subprocess.run([BIN, "import", npy, "--rate", "8000", "--out", tcap], check=True, capture_output=True)
                cls.paths.append(tcap)
            else:
                cls.paths.append(npy)
        cls.broken = os.path.join(cls.tmp.name, "broken.tcap")
        with open(cls.broken, "wb") as f:
            f.write(b"\x89TCAP\r\n\x1a" + b"\x00" * 10)  # a capture's magic, then nothing usable
        cls.missing = os.path.join(cls.tmp.name, "missing.tcap")
        cls.inputs = cls.paths[:2] + [cls.broken] + cls.paths[2:] + [cls.missing]
        cls.options = dict(rate=8000, welch=512, measure=["tone", "thd", "sinad"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        # The broken and missing files make a batch warn (test_failures_are_not_silent checks that): quiet elsewhere.
        quiet = warnings.catch_warnings()
        quiet.__enter__()
        self.addCleanup(quiet.__exit__, None, None, None)
        warnings.simplefilter("ignore", batch.BatchWarning)

    def check_table(self, df):
        self.assertEqual(len(df), 10)  # 5 files × 1 source × 2 channels
        self.assertEqual(list(df["file"].unique()), self.paths)
        self.assertEqual([f["file"] for f in df.attrs["failures"]], [self.broken, self.missing])
        self.assertTrue(all(f["error"] for f in df.attrs["failures"]))
        tones = df[df["channel"] == 0]["tone_frequency"].to_numpy()
        np.testing.assert_allclose(tones, [100, 150, 200, 250, 300], rtol=1e-3)
        self.assertEqual(len(df["welch_psd"].iloc[0]), 257)
        # Each row is the document tributary.analyze gives for its file.
        document = tributary.analyze(self.paths[1], **self.options)
        self.assertEqual(list(batch.rows_of(document)[1]["welch_psd"]), list(df.iloc[3]["welch_psd"]))
        self.assertEqual(batch.rows_of(document)[0]["sinad_db"], df.iloc[2]["sinad_db"])

    def test_single_process_and_local_processes_agree(self):
        single = batch.analyze_many(self.inputs, processes=1, **self.options)
        self.check_table(single)
        local = batch.analyze_many(self.inputs, processes=2, **self.options)
        pd.testing.assert_frame_equal(single, local)
        self.assertEqual(single.attrs, local.attrs)
        chunked = batch.analyze_many(self.inputs, processes=2, batch=2, **self.options)
        pd.testing.assert_frame_equal(single, chunked)
        self.assertEqual(single.attrs, chunked.attrs)

    def test_dask_local_cluster_equals_single_process(self):
        from dask.distributed import Client, LocalCluster

        single = batch.analyze_many(self.inputs, processes=1, **self.options)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, \
                Client(cluster) as client:
            distributed = batch.analyze_many(self.inputs, client=client, **self.options)
            # Several files a task (the broken and the missing file inside groups): the same table, in order.
            grouped = batch.analyze_many(self.inputs, client=client, batch=3, **self.options)
            self.assertEqual(len(client.scheduler_info()["workers"]), 2)
        pd.testing.assert_frame_equal(single, distributed)
        self.assertEqual(single.attrs, distributed.attrs)
        pd.testing.assert_frame_equal(single, grouped)
        self.assertEqual(single.attrs, grouped.attrs)

    def test_relative_paths_reach_the_workers(self):
        # A worker resolves a relative path from its own directory: analyze_many hands out absolute
        # ones (this process's directory). The workers start here, then this process moves to the
        # captures' directory and names them relative to it: every one used to fail, silently.
        from dask.distributed import Client, LocalCluster

        names = [os.path.basename(p) for p in self.paths]
        here = os.getcwd()
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, \
                Client(cluster) as client:
            os.chdir(self.tmp.name)
            try:
                df = batch.analyze_many(names, client=client, **self.options)
            finally:
                os.chdir(here)
        self.assertEqual(df.attrs["failures"], [])
        self.assertEqual(len(df), 10)
        self.assertEqual(list(df["file"].unique()), names)  # named as given
        single = batch.analyze_many(self.paths, processes=1, **self.options)
        pd.testing.assert_frame_equal(df.drop(columns="file"), single.drop(columns="file"))

    def test_failures_are_not_silent(self):
        # Every file failing is an error, not an empty table; some failing is a warning naming them.
        with self.assertRaises(batch.BatchError) as e:
            batch.analyze_many([self.broken, self.missing], processes=1, **self.options)
        self.assertEqual([f["file"] for f in e.exception.failures], [self.broken, self.missing])
        self.assertIn("none of the 2 files could be analysed", str(e.exception))
        self.assertIn(self.missing, str(e.exception))
        with self.assertRaises(batch.BatchError):
            batch.analyze_many([self.missing], processes=2, **self.options)
        with self.assertWarns(batch.BatchWarning) as w:
            df = batch.analyze_many(self.inputs, processes=1, **self.options)
        self.assertIn("2 of 7 files could not be analysed", str(w.warning))
        self.assertIn(self.broken, str(w.warning))
        self.assertIn(self.missing, str(w.warning))
        self.check_table(df)
        self.assertEqual(len(batch.analyze_many([], processes=1, **self.options)), 0)  # nothing asked: nothing failed
        # Counts: integers, not bools or floats.
        for kwargs, error in ((dict(batch=True), ValueError), (dict(processes=0), ValueError), (dict(processes=-2), ValueError),
                              (dict(processes=1.5), TypeError), (dict(processes=True), TypeError)):
            with self.subTest(**kwargs), self.assertRaises(error):
                batch.analyze_many(self.paths[:1], **kwargs, **self.options)

    def test_a_torn_capture_is_named_as_damaged_not_as_empty(self):
        # The error says what inspect says (the damage and its byte offset) and points to repair.
        torn = os.path.join(self.tmp.name, "torn.tcap")
        with open(self.paths[0], "rb") as f:
            data = f.read()
        with open(torn, "wb") as f:
            f.write(data[:len(data) // 2])
        with self.assertRaises(batch.BatchError) as e:
            batch.analyze_many([torn], processes=1, **self.options)
        error = e.exception.failures[0]["error"]
        self.assertIn("no analog data could be read; the file is damaged: damage at byte 64", error)
        self.assertIn("torn tail", error)
        self.assertIn(f"tributary repair {torn}", error)

    def test_packed_rows_come_back_equal(self):
        # A worker's rows travel with each array column stacked when every row has it at one length.
        rows = [{"file": "a", "channel": c, "welch_frequencies": np.arange(5.0), "welch_psd": np.full(5, c + 0.5),
                 "spectrum_frequencies": np.arange(3 + c, dtype=float), "spectrum_amplitude_rms": np.ones(3 + c)}
                for c in range(3)]
        rows.append({"file": "a", "channel": 3, "welch_frequencies": np.arange(5.0), "welch_psd": np.zeros(5)})
        packed, stacked = batch._packed([dict(r) for r in rows])
        self.assertEqual(sorted(stacked), ["welch_frequencies", "welch_psd"])
        self.assertEqual(stacked["welch_psd"].shape, (4, 5))
        self.assertEqual(stacked["welch_frequencies"].shape, (5,))  # every row the same: sent once
        self.assertNotIn("welch_psd", packed[0])
        self.assertIn("spectrum_amplitude_rms", packed[0])  # lengths differ: left in its rows
        back = batch._unpacked(packed, stacked)
        self.assertEqual([list(r) for r in back], [list(r) for r in rows])
        for got, want in zip(back, rows):
            for k in want:
                np.testing.assert_array_equal(got[k], want[k])
        self.assertEqual(batch._packed([]), ([], {}))
        # Rows rebuilt from one sent row are arrays of their own, as unpacked rows are.
        back[0]["welch_frequencies"][0] = 99.0
        self.assertEqual(back[1]["welch_frequencies"][0], 0.0)
        # Equal means bit for bit: NaN rows are one row, 0.0 and -0.0 are not.
        nan = [{"welch_psd": np.array([np.nan, 1.0])} for _ in range(2)]
        self.assertEqual(batch._packed(nan)[1]["welch_psd"].shape, (2,))
        signed = [{"welch_psd": np.array([0.0, 1.0])}, {"welch_psd": np.array([-0.0, 1.0])}]
        _, stacked = batch._packed([dict(r) for r in signed])
        self.assertEqual(stacked["welch_psd"].shape, (2, 2))
        back = batch._unpacked([{}, {}], stacked)
        self.assertEqual([np.signbit(r["welch_psd"][0]) for r in back], [False, True])

    def test_files_per_task(self):
        self.assertEqual([batch.files_per_task(n, 2) for n in (1, 3, 4, 8, 16, 32, 1000)], [1, 1, 1, 2, 4, 8, 8])
        self.assertEqual(batch.files_per_task(16, 1), 8)
        self.assertEqual(batch.files_per_task(16, 0), 8)
        for bad in (0, -1, 1.5, "2"):
            with self.assertRaisesRegex(ValueError, "batch must be a positive number of files per task"):
                batch.analyze_many(self.inputs, processes=1, batch=bad, **self.options)

    def test_scheduler_and_workers_started_as_docs_python_md_says(self):
        # The several-machines recipe of docs/PYTHON.md, on 127.0.0.1: a `dask scheduler` process and a
        # `dask worker` process with two single-threaded workers, reached by address.
        import re
        import subprocess
        import sys
        import time

        from dask.distributed import Client

        dask = os.path.join(os.path.dirname(sys.executable), "dask")
        logs = tempfile.TemporaryDirectory()
        self.addCleanup(logs.cleanup)
        scheduler_log = open(os.path.join(logs.name, "scheduler.log"), "w+")
        self.addCleanup(scheduler_log.close)
        scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
                                     stdout=scheduler_log, stderr=subprocess.STDOUT)
        self.addCleanup(scheduler.wait, 30)
        self.addCleanup(scheduler.terminate)
        address, deadline = None, time.monotonic() + 60
        while address is None and time.monotonic() < deadline and scheduler.poll() is None:
            time.sleep(0.2)
            scheduler_log.seek(0)
            found = re.search(r"Scheduler at:\s+(tcp://127\.0\.0\.1:\d+)", scheduler_log.read())
            address = found.group(1) if found else None
        self.assertIsNotNone(address, "dask scheduler did not print its address")
        workers = subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--host", "127.0.0.1",
                                    "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(workers.wait, 30)
        self.addCleanup(workers.terminate)
        single = batch.analyze_many(self.inputs, processes=1, **self.options)
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            distributed = batch.analyze_many(self.inputs, client=client, **self.options)
        pd.testing.assert_frame_equal(single, distributed)
        self.assertEqual(single.attrs, distributed.attrs)

    def test_parquet(self):
        out = os.path.join(self.tmp.name, "results.parquet")
        df = batch.analyze_many(self.paths[:2], processes=1, out=out, stats=True)
        back = pd.read_parquet(out)
        self.assertEqual(list(back["rms"]), list(df["rms"]))


if __name__ == "__main__":
    unittest.main()
