"""Clock offsets: Tributary's probes (docs/PROTOCOL.md §4.9) beside Lab Streaming Layer's
`StreamInlet.time_correction()` (pylsl, whose wheel bundles liblsl), on the same faked clocks.

Each run starts, at the same time, a `tributary serve --simulate` and an LSL outlet (a child of this
script, role `outlet`), each under libfaketime's `faketime -f SPEC`, and measures both for --seconds:

  Tributary  `tributary record` of the publisher, then `inspect --json`: every clock-offset record
             (publisher clock minus recorder clock, the round trip of its probe, when it was measured).
             Tributary's clock is the wall clock, so the publisher runs with FAKETIME_DONT_FAKE_MONOTONIC=1
             (only the wall clock moves, as between two hosts).
  LSL        an inlet in this process calls liblsl's lsl_time_correction_ex every 0.1 s and keeps each
             new estimate (value, remote time, uncertainty = the round trip of its best probe). LSL's
             clock is the monotonic clock (std::chrono::steady_clock), which libfaketime moves when
             FAKETIME_DONT_FAKE_MONOTONIC is not set: the faked monotonic clock then reads the faked
             wall clock (measured: real wall + the offset + the drift).

The true offset is known from faketime: under `+1.5s xR` the faked clock reads, at real time t,
t + 1.5 + (R − 1)(t − s), s the faked process's start (its launch; libfaketime starts the rate at
its first call, about 20 ms later: 2 µs at R = 1.0001). Both are reported as the publisher's clock
minus the subscriber's: LSL's time_correction is the opposite sign, and against its local monotonic
clock, so its offset here is −time_correction − (wall − monotonic of this process), the last
measured when the estimate is read. Error = |estimate − true offset at the estimate's time|.

Scenarios: `offset` (faketime '+1.5s') and `drift` ('+1.5s x1.0001': 100 ppm, the true offset grows
0.1 ms a second). The LSL outlet sends no samples; the Tributary publisher sends 10 frames/s of
its simulated source under '+1.5s' and none under the rate (libfaketime scales the simulator's waits
and it publishes nothing with the monotonic clock left alone), so only probes cross then. Per run and tool: the median error over the run's estimates, the error of the
last estimate (after ~10 s, the acceptance's moment), the median round trip. Across --runs runs:
median and range. Prints a table; --json writes everything.

Usage: python Benchmarks/clock_bench.py [--tributary PATH] [--runs 5] [--seconds 12] [--json PATH]
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Interop"))
from tool_process import stop_wrapped  # noqa: E402  (the wrapper's children, as the tests stop them)

SKEW = 1.5
SCENARIOS = [("offset", f"+{SKEW}s", 1.0), ("drift", f"+{SKEW}s x1.0001", 1.0001)]
FAKETIME = shutil.which("faketime")


def outlet(source_id: str) -> None:
    """The LSL peer: an outlet that answers time probes until a line arrives on stdin."""
    import pylsl
    info = pylsl.StreamInfo("tributary-clock-bench", "clock", 1, 100, pylsl.cf_double64, source_id)
    out = pylsl.StreamOutlet(info)
    print(json.dumps({"ready": True, "liblsl": pylsl.library_version(), "pylsl": getattr(pylsl, "__version__", "?")}),
          flush=True)
    sys.stdin.readline()
    del out


class Faked:
    """A command under `faketime -f SPEC`; ended by its own PID (the wrapper then exits and removes its
    shared-memory files)."""

    def __init__(self, spec: str, command: list, fake_monotonic: bool):
        env = dict(os.environ)
        if not fake_monotonic:
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        self.launched_wall = time.time()
        self.wrapper = subprocess.Popen([FAKETIME, "-f", spec, *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=env)
        self.first_line = self.wrapper.stdout.readline()

    def stop(self) -> None:
        try:
            self.wrapper.stdin.close()
        except OSError:
            pass
        stop_wrapped(self.wrapper, timeout=20)


def true_offset(rate: float, launched_wall: float, at_wall: float) -> float:
    return SKEW + (rate - 1.0) * (at_wall - launched_wall)


def tributary_run(tool: str, rate: float, publisher: Faked, seconds: float, directory: str) -> dict:
    if not publisher.first_line.startswith("listening on "):
        raise RuntimeError(f"serve under faketime printed {publisher.first_line!r}")
    port = publisher.first_line.strip().rsplit(":", 1)[1]
    capture = os.path.join(directory, "clock.tcap")
    recorded = subprocess.run([tool, "record", f"127.0.0.1:{port}", "--api-key", "k", "--out", capture, "--duration",
                               str(seconds)], capture_output=True, text=True, timeout=seconds + 60)
    if recorded.returncode != 0:
        raise RuntimeError(f"record: {recorded.stderr}")
    described = json.loads(subprocess.run([tool, "inspect", capture, "--json"], capture_output=True, text=True,
                                          timeout=60, check=True).stdout)
    estimates = []
    for o in described["clock_offsets"]:
        at = o["measured_at_ns"] / 1e9
        truth = true_offset(rate, publisher.launched_wall, at)
        estimates.append({"at_s": at - publisher.launched_wall, "offset_s": o["offset_s"], "true_s": truth,
                          "error_s": abs(o["offset_s"] - truth), "rtt_s": o["rtt_s"]})
    return {"estimates": estimates}


def lsl_run(rate: float, publisher: Faked, source_id: str, seconds: float) -> dict:
    import pylsl
    streams = pylsl.resolve_byprop("source_id", source_id, minimum=1, timeout=10)
    if not streams:
        raise RuntimeError(f"no LSL stream with source_id {source_id}")
    inlet = pylsl.StreamInlet(streams[0])
    from pylsl.lib import lib as liblsl
    correction_ex = liblsl.lsl_time_correction_ex
    correction_ex.restype = ctypes.c_double
    correction_ex.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                              ctypes.c_double, ctypes.POINTER(ctypes.c_int)]
    remote, uncertainty, error = ctypes.c_double(), ctypes.c_double(), ctypes.c_int()
    estimates, last_remote = [], None
    end = time.monotonic() + seconds
    first = True
    while time.monotonic() < end:
        value = correction_ex(inlet.obj, ctypes.byref(remote), ctypes.byref(uncertainty), 5.0 if first else 0.0,
                              ctypes.byref(error))
        first = False
        wall_minus_mono = time.time() - time.monotonic()
        if error.value == 0 and remote.value != last_remote:
            last_remote = remote.value
            # LSL's value is local − remote (monotonic clocks); ours is the publisher's wall clock minus ours.
            offset = -value - wall_minus_mono
            at = remote.value + value + wall_minus_mono  # the probe's time on this host's wall clock
            truth = true_offset(rate, publisher.launched_wall, at)
            estimates.append({"at_s": at - publisher.launched_wall, "offset_s": offset, "true_s": truth,
                              "error_s": abs(offset - truth), "rtt_s": uncertainty.value})
        time.sleep(0.1)
    inlet.close_stream()
    return {"estimates": estimates}


def summarize(run: dict) -> dict:
    e = run["estimates"]
    if not e:
        return {"estimates": 0, "median_error_us": None, "last_error_us": None, "median_rtt_us": None}
    return {"estimates": len(e), "median_error_us": statistics.median(x["error_s"] for x in e) * 1e6,
            "last_error_us": e[-1]["error_s"] * 1e6, "last_at_s": e[-1]["at_s"],
            "median_rtt_us": statistics.median(x["rtt_s"] for x in e) * 1e6}


def one_run(tool: str, spec: str, rate: float, seconds: float, run_index: int) -> dict:
    source_id = f"tributary-clock-bench-{os.getpid()}-{run_index}"
    directory = tempfile.mkdtemp(prefix="tributary-clock-bench-")
    publisher = Faked(spec, [tool, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--no-announce",
                             "--simulate", "id=1,name=CLK,rate=1000,channels=1,block=100"], fake_monotonic=False)
    lsl_outlet = Faked(spec, [sys.executable, os.path.abspath(__file__), "outlet", "--source-id", source_id],
                       fake_monotonic=True)
    results = {}
    try:
        ours = threading.Thread(target=lambda: results.__setitem__(
            "tributary", tributary_run(tool, rate, publisher, seconds, directory)))
        ours.start()
        try:
            results["lsl"] = lsl_run(rate, lsl_outlet, source_id, seconds)
        finally:
            ours.join()
        results["lsl_version"] = json.loads(lsl_outlet.first_line)
    finally:
        publisher.stop()
        lsl_outlet.stop()
        shutil.rmtree(directory, ignore_errors=True)
    if "tributary" not in results:
        raise RuntimeError("the Tributary measurement failed (see above)")
    return results


def spread(values: list) -> dict:
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "outlet":
        outlet(sys.argv[sys.argv.index("--source-id") + 1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tributary", default=".build/release/tributary")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=12)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not FAKETIME:
        print("clock_bench: faketime (Debian package faketime) is not installed", file=sys.stderr)
        return 2
    if not 1 <= args.runs <= 100 or not 6 <= args.seconds <= 600:
        parser.error("--runs in [1, 100] and --seconds in [6, 600]")
    report = {"skew_s": SKEW, "seconds": args.seconds, "runs": args.runs, "scenarios": {}}
    for name, spec, rate in SCENARIOS:
        runs = []
        for k in range(args.runs):
            r = one_run(args.tributary, spec, rate, args.seconds, k)
            report["lsl"] = r.pop("lsl_version")
            runs.append(r)
            s = {tool: summarize(r[tool]) for tool in ("tributary", "lsl")}
            print(f"{name} run {k + 1}/{args.runs}: " + "; ".join(
                f"{tool} {v['estimates']} estimates, median error {v['median_error_us']:.1f} µs, "
                f"last {v['last_error_us']:.1f} µs, RTT {v['median_rtt_us']:.0f} µs"
                if v["estimates"] else f"{tool} no estimate" for tool, v in s.items()), file=sys.stderr, flush=True)
        summary = {}
        for tool in ("tributary", "lsl"):
            per_run = [summarize(r[tool]) for r in runs]
            summary[tool] = {key: spread([p[key] for p in per_run])
                             for key in ("median_error_us", "last_error_us", "median_rtt_us", "estimates")}
        report["scenarios"][name] = {"faketime": spec, "summary": summary, "runs": runs}
    print(f"clock offsets under faketime, {args.runs} runs x {args.seconds:g} s "
          f"(medians over runs [min-max]; error = |estimate - true offset|, µs)")
    print(f"{'scenario':<28} {'tool':<10} {'median error':>24} {'last error (~10 s)':>24} {'RTT':>24} {'estimates':>10}")
    for name, scenario in report["scenarios"].items():
        for tool, s in scenario["summary"].items():
            def cell(x, digits=1):
                return "-" if x["median"] is None else f"{x['median']:.{digits}f} [{x['min']:.{digits}f}-{x['max']:.{digits}f}]"
            label = f"{name} ({scenario['faketime']})"
            print(f"{label:<28} {tool:<10} {cell(s['median_error_us']):>24} {cell(s['last_error_us']):>24} "
                  f"{cell(s['median_rtt_us'], 0):>24} {cell(s['estimates'], 0):>10}")
    lsl = report.get("lsl", {})
    print(f"peer: pylsl {lsl.get('pylsl')} (liblsl {lsl.get('liblsl')})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
