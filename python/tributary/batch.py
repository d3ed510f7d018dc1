"""Batch analysis of many files: one task per file, on a Dask cluster or on local processes.

>>> from dask.distributed import Client
>>> df = tributary.batch.analyze_many(paths, client=Client("tcp://scheduler:8786"), welch=1024, measure="all")
>>> df.attrs["failures"]          # [{"file": ..., "error": ...}] — a broken file is never fatal
>>> df.to_parquet("results.parquet")

Each task opens one file through this package (the library every worker loads) and returns its rows;
the caller's process concatenates them, in the order of ``paths``. Captures must be on storage every
worker can read.
"""
from __future__ import annotations

import os
import pickle
import warnings
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from ._native import integer
from .analysis import analyze


class BatchError(RuntimeError):
    """No file of a batch could be analysed; ``failures`` lists them (``{"file", "error"}``), as
    ``df.attrs["failures"]`` would have."""

    def __init__(self, message: str, failures: List[Dict[str, str]]):
        super().__init__(message)
        self.failures = failures


class BatchWarning(UserWarning):
    """Some files of a batch could not be analysed (the message lists them; so does ``df.attrs["failures"]``)."""


def _listed(failures: List[Dict[str, str]], most: int = 10) -> str:
    lines = [f"  {f['file']}: {f['error']}" for f in failures[:most]]
    if len(failures) > most:
        lines.append(f"  ... and {len(failures) - most} more (df.attrs['failures'] / the exception's .failures)")
    return "\n".join(lines)

_STATS = ["count", "min", "max", "mean", "std", "std_sample", "variance", "rms", "positive_peak", "negative_peak",
          "peak_to_peak"]
_MEASURES = ["thd", "thd_db", "thd_percent", "thd_n_db", "sinad_db", "snr_db", "enob", "sfdr_db", "full_scale",
             "signal_dbfs", "sinad_dbfs", "snr_dbfs", "enob_fs", "sfdr_dbfs"]


def rows_of(document: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rows (file × source × channel) of one `analyze` document: statistics and measurements as
    columns, Welch and spectrum arrays as array columns (ndarrays from :func:`analyze_many`)."""
    rows = []
    for source in document["sources"]:
        for ch in source["channels"]:
            row: Dict[str, Any] = {
                "file": document["file"], "source_id": source["id"], "source_name": source["name"],
                "sample_rate": source["sample_rate"], "dtype": source["dtype"], "channel": ch["index"],
                "samples": ch["samples"], "unit": ch.get("unit", ""), "discontinuities": source["discontinuities"],
            }
            if "stats" in ch:
                for k in _STATS:
                    row[k] = ch["stats"][k]
            if "tone" in ch:
                row["tone_frequency"] = ch["tone"]["frequency"]
                row["tone_amplitude"] = ch["tone"]["amplitude"]
                row["tone_phase_deg"] = ch["tone"]["phase_deg"]
            for k in _MEASURES:
                if k in ch:
                    row[k] = ch[k]
            if "measurement_error" in ch:
                row["measurement_error"] = ch["measurement_error"]
            if "welch" in ch:
                row["welch_frequencies"] = ch["welch"]["frequencies"]
                row["welch_psd"] = ch["welch"]["psd"]
            if "spectrum" in ch:
                row["spectrum_frequencies"] = ch["spectrum"]["frequencies"]
                row["spectrum_amplitude_rms"] = ch["spectrum"]["amplitude_rms"]
            rows.append(row)
    return rows


def analyze_file(path: str, options: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], Optional[Dict[str, str]]]:
    """One task: the rows of one file, or its failure (never raises)."""
    try:
        return rows_of(analyze(path, **{**options, "arrays": "numpy"})), None
    except Exception as e:  # a broken file is a failure row, whatever broke
        return [], {"file": os.fspath(path), "error": f"{type(e).__name__}: {e}"}


_ARRAY_COLUMNS = ("welch_frequencies", "welch_psd", "spectrum_frequencies", "spectrum_amplitude_rms")


def _packed(rows: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """A file's rows for the trip back from a worker: each array column whose rows all hold arrays
    of one length moved into one 2-D array (a row per row), so that the result is a few buffers
    rather than a few per channel — a cluster serialises every array apart. A column whose rows
    all hold the same values (the frequencies of a source's channels) travels as that one 1-D
    array: half of what a file's Welch results weigh, and a LocalCluster moves results at about
    100 MB/s of its worker's event-loop time on a busy two-core machine."""
    stacked: Dict[str, Any] = {}
    for column in _ARRAY_COLUMNS:
        values = [row.get(column) for row in rows]
        if rows and all(isinstance(v, np.ndarray) and v.ndim == 1 and v.shape == values[0].shape for v in values):
            block = np.stack(values)
            # Bit for bit (NaN equal to NaN, 0.0 not to -0.0): the rows rebuilt must be these.
            same = block.view(np.uint8).reshape(len(values), -1)
            stacked[column] = block[0] if (same == same[0]).all() else block
    if not stacked:
        return rows, stacked
    return [{k: v for k, v in row.items() if k not in stacked} for row in rows], stacked


def _unpacked(rows: List[Dict[str, Any]], stacked: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rows `_packed` took apart: each row's arrays as rows of the stacked arrays (views; a
    column sent as one row is repeated into one array first, so that every row still owns its own
    values), the array columns last and in :func:`rows_of`'s order, as an unpacked row has them."""
    if not stacked:
        return rows
    stacked = {column: np.repeat(block[np.newaxis], len(rows), axis=0) if block.ndim == 1 else block
               for column, block in stacked.items()}
    for i, row in enumerate(rows):
        arrays = {column: stacked[column][i] if column in stacked else row.pop(column)
                  for column in _ARRAY_COLUMNS if column in stacked or column in row}
        row.update(arrays)
    return rows


def analyze_files(paths: List[str], options: Dict[str, Any]) -> bytes:
    """One task of several files: for each, in order, its rows packed (:func:`_packed`) and its
    failure, pickled into one ``bytes`` (read back with :func:`_results_of`).

    One opaque buffer is what a cluster moves fastest: given the rows themselves, Dask walks and
    serialises every dict, number and array apart, and a LocalCluster took 22-24 ms to hand a client
    four results of 600 KB against 8 ms as pickled buffers (an idle two-core machine): a fixed cost
    of every batch, paid after its last task.
    """
    results = []
    for path in paths:
        rows, failure = analyze_file(path, options)
        results.append((*_packed(rows), failure))
    return pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)


def _results_of(blob: bytes) -> List[Tuple[List[Dict[str, Any]], Dict[str, Any], Optional[Dict[str, str]]]]:
    """The results an :func:`analyze_files` task returned (a buffer from this package's own workers)."""
    return pickle.loads(blob)


def files_per_task(files: int, threads: int) -> int:
    """How many files one task analyses: about two tasks per worker thread, so that a slow file
    still leaves the others work to take, and at most 8 files a task. One file is tens of
    milliseconds of work, and a task costs the scheduler and client a few milliseconds on a busy
    two-core machine (3-4 ms measured with a LocalCluster of two processes), which Dask's guidance
    puts at 100 ms and more per task."""
    return max(1, min(8, files // (2 * max(1, threads))))


def analyze_many(paths: Iterable[Union[str, os.PathLike]], client: Any = None, *, processes: Optional[int] = None,
                 out: Optional[Union[str, os.PathLike]] = None, batch: Optional[int] = None, **options: Any):
    """Analyses many files as ``tributary analyze`` does, one task per file, and returns a pandas
    DataFrame with one row per file × source × channel (see :func:`rows_of` for the columns).

    :param paths: captures, NPY or frame files.
    :param client: a ``dask.distributed.Client``: tasks run on its workers. None: on local processes.
    :param processes: without a client, how many local processes (default: the number of cores;
        1 runs every file in this process).
    :param out: also write the table to this Parquet file.
    :param batch: files per task (default :func:`files_per_task`: about two tasks per worker
        thread, 1 … 8 files each); 1 makes one task per file.
    :param options: the options of :func:`tributary.analyze` (``rate``, ``welch``, ``measure``, …).
    :returns: the DataFrame; files that could not be analysed are listed in ``df.attrs["failures"]``
        as ``{"file", "error"}`` dicts, in the order of ``paths``, and a :class:`BatchWarning` lists them.
    :raises BatchError: no file could be analysed (every one failed; ``.failures`` lists them).

    Paths are made absolute (from this process's working directory) before they are handed out: a
    worker resolves a relative path from its own directory, which need not be this one. The table's
    "file" column and the failures name each file as ``paths`` gives it.
    """
    import pandas as pd

    given = [os.fspath(p) for p in paths]
    paths = [os.path.abspath(p) for p in given]
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ValueError(f"batch must be a positive number of files per task, not {batch!r}")
    if processes is not None:
        processes = integer(processes, "processes", 1)
    if client is not None:
        import uuid

        size = batch or files_per_task(len(paths), sum(client.nthreads().values()))
        groups = [paths[i:i + size] for i in range(0, len(paths), size)]
        # Unique keys: the same file with other options must not reuse a result the cluster still holds.
        run = uuid.uuid4().hex
        futures = client.map(analyze_files, groups, options=options, key=[f"tributary-analyze-{run}-{i}" for i in range(len(groups))])
        results = [(_unpacked(rows, stacked), failure)
                   for blob in client.gather(futures) for rows, stacked, failure in _results_of(blob)]
    elif processes == 1 or len(paths) <= 1:
        results = [analyze_file(p, options) for p in paths]
    else:
        import concurrent.futures
        import multiprocessing

        workers = min(len(paths), processes or os.cpu_count() or 1)
        # spawn: the parent may hold threads (a loaded library, a Dask client) that fork would copy mid-flight.
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(analyze_file, paths, [options] * len(paths),
                                    chunksize=batch or files_per_task(len(paths), workers)))
    # Each file by the name the caller gave it (the tasks had its absolute path).
    for name, (file_rows, failure) in zip(given, results):
        for row in file_rows:
            row["file"] = name
        if failure is not None:
            failure["file"] = name
    rows = [row for file_rows, _ in results for row in file_rows]
    failures = [failure for _, failure in results if failure is not None]
    if failures and len(failures) == len(given):
        raise BatchError(f"none of the {len(given)} files could be analysed:\n{_listed(failures)}", failures)
    if failures:
        warnings.warn(f"{len(failures)} of {len(given)} files could not be analysed (df.attrs['failures']):\n{_listed(failures)}",
                      BatchWarning, stacklevel=2)
    df = pd.DataFrame(rows)
    df.attrs["failures"] = failures
    if out is not None:
        df.to_parquet(out)
    return df
