"""Peer for the signal suite: one operation of scipy.signal, and of tributary.signal when the package
and its library load, on the same CHANNELS x N float64 input (an NPY file the suite wrote), in
REPS interleaved rounds (scipy, then tributary.signal, in each round). Every result is compared
with scipy's: the Swift library's (an NPY file the suite wrote) and tributary.signal's, as
max|a - b| / max|b| (the relative error the tests bound by 1e-12).

usage: signal_peer.py OP INPUT.npy SOS.npy SWIFT_OUTPUT.npy REPS
Prints {"scipy_s": [...], "python_s": [...] or null, "swift_error": e, "python_error": e or null,
"python_skipped": reason or null} on its last line.
"""
import json
import sys
import time

import numpy as np
from scipy import signal as scipy_signal

# The operations of issue 42's speed list, with the same arguments for every implementation.
# coherence: channels 0-3 against channels 4-7 (four pairs of the 8 x N input).
OPERATIONS = {
    "sosfilt": lambda ss, x, sos: ss.sosfilt(sos, x, axis=-1),
    "sosfiltfilt": lambda ss, x, sos: ss.sosfiltfilt(sos, x, axis=-1),
    "resample_poly": lambda ss, x, sos: ss.resample_poly(x, 2, 3, axis=-1),
    "decimate": lambda ss, x, sos: ss.decimate(x, 10, axis=-1),
    "spectrogram": lambda ss, x, sos: ss.spectrogram(x, fs=1.0, nperseg=1024, axis=-1)[2],
    "coherence": lambda ss, x, sos: ss.coherence(x[: len(x) // 2], x[len(x) // 2:], fs=1.0, nperseg=4096, axis=-1)[1],
}


def relative_error(a, b):
    """max|a - b| / max|b|; 1.0 for different shapes or a NaN where scipy has none (JSON has no inf or NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        print(f"shape {a.shape} differs from scipy's {b.shape}", file=sys.stderr)
        return 1.0
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        print(f"{int(np.isnan(a).sum())} NaN values where scipy has {int(np.isnan(b).sum())}", file=sys.stderr)
        return 1.0
    finite = ~np.isnan(b)
    scale = float(np.max(np.abs(b[finite]), initial=0.0))
    error = float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))
    return error / scale if scale > 0 else error


def tributary_signal():
    """tributary.signal, or the reason it cannot be used."""
    try:
        import tributary.signal as ts
        ts.butter(2, 0.5, output="sos")
        return ts, None
    except Exception as error:  # the package or its library missing: scipy's figures alone
        return None, f"{type(error).__name__}: {error}"


def main():
    op, input_path, sos_path, swift_path, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    run = OPERATIONS[op]
    x = np.load(input_path)
    sos = np.load(sos_path)
    reference = run(scipy_signal, x, sos)
    swift = np.load(swift_path)  # written 2-D: rows × the rest of scipy's shape, in C order
    swift_error = relative_error(swift.reshape(reference.shape) if swift.size == reference.size else swift, reference)
    ts, skipped = tributary_signal()
    python_error = None
    if ts is not None:
        python_error = relative_error(run(ts, x, sos), reference)
    scipy_times, python_times = [], []
    for _ in range(reps):
        start = time.perf_counter()
        run(scipy_signal, x, sos)
        scipy_times.append(time.perf_counter() - start)
        if ts is not None:
            start = time.perf_counter()
            run(ts, x, sos)
            python_times.append(time.perf_counter() - start)
    print(json.dumps({"scipy_s": scipy_times, "python_s": python_times if ts is not None else None,
                      "swift_error": swift_error, "python_error": python_error, "python_skipped": skipped}))


if __name__ == "__main__":
    main()
