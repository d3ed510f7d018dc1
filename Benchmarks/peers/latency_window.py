"""What the latency peers (zmq_process_peer.py, lsl_peer.py) share: the options of the measurement
window, and the percentiles they report. Not a peer: they import it."""


def add_window_options(parser, start_on_stdin_help):
    """The window's options: it starts --warmup s after start (or at --start-unix, or when a line on
    stdin gives it, with --start-on-stdin) and lasts --seconds; senders wait --wait-subscribers s."""
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--start-unix", type=float, default=0, help="start of the measurement window (default: --warmup s after start)")
    parser.add_argument("--wait-subscribers", type=float, default=1.0)
    parser.add_argument("--start-on-stdin", action="store_true", help=start_on_stdin_help)


def latency_percentiles_us(latencies, microseconds):
    """{"p50", "p99", "p999"} of the latencies (sorted in place), each converted by `microseconds`;
    None each when there are none."""
    latencies.sort()

    def q(p):
        return microseconds(latencies[min(len(latencies) - 1, int(p * len(latencies)))]) if latencies else None

    return {"p50": q(0.5), "p99": q(0.99), "p999": q(0.999)}
