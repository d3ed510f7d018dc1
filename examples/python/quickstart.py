"""Quick start for the Python package (README, "Python"): a capture into numpy, its analysis, and a
batch of captures analysed on a Dask LocalCluster with two worker processes.

    make python
    .venv/bin/python examples/python/quickstart.py CAPTURE.tcap [MORE.tcap ...]

Any captures work: `make demo` prints where it wrote demo.tcap, and `tributary import`, `record` and
`repair` make them. The results go to quickstart-results.parquet beside the first capture.
`make python-tests` and Tests/Interop/test_readme.py run this file.
"""
import os
import sys

from dask.distributed import Client, LocalCluster

import tributary
import tributary.batch


def main(paths):
    # 1. A capture into numpy: (channels, samples) in physical units, with names, units and rate.
    with tributary.open(paths[0]) as capture:
        source = capture.sources[0]
        volts = capture.read(source.id)
        print(f"{paths[0]}: source {source.id} '{source.name}', {source.sample_rate:g} Hz, "
              f"channels {[c.name for c in source.channels]} [{source.channels[0].unit}] -> ndarray {volts.shape}")
        print(f"  channel 0: mean {volts[0].mean():.6g}, min {volts[0].min():.6g}, max {volts[0].max():.6g}")

    # 2. The `tributary analyze` pipeline on the same file, as the command's JSON document.
    result = tributary.analyze(paths[0], welch=1024, measure=["tone", "thd", "enob"])
    channel = result["sources"][0]["channels"][0]
    print(f"  tone {channel['tone']['frequency']:.3f} Hz, THD {channel['thd_db']:.1f} dB, ENOB {channel['enob']:.2f}")

    # 3. Many captures on a Dask cluster: one row per file x source x channel, failures kept aside.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        df = tributary.batch.analyze_many(paths, client=client, stats=True, welch=1024)
    print(df[["file", "source_id", "channel", "unit", "rms", "peak_to_peak"]].to_string(index=False))
    print(f"failures: {df.attrs['failures']}")
    out = os.path.join(os.path.dirname(os.path.abspath(paths[0])), "quickstart-results.parquet")
    df.to_parquet(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: quickstart.py CAPTURE.tcap [MORE.tcap ...]")
    sys.exit(main(sys.argv[1:]))
