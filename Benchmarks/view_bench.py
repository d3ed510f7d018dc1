"""CPU cost of `tributary view` per MB/s of stream, and the bytes per second it sends to a browser.

For each stream rate (1, 10, 100 MB/s of float64 samples: 8 channels from `serve --simulate`, all 8
shown, so all of it crosses the network to the viewer) and each round, the peer `tributary subscribe`
(the plain subscriber, printing a line per package to /dev/null) and `tributary view` (with one
WebSocket client that acknowledges every update, as the page does) are run in turn against the same
publisher; each is measured over --seconds after a warm-up: its CPU time (utime + stime from
/proc/PID/stat) per second of wall time, and for `view` the stream rate it actually receives (the
MB/s field of its updates: a loaded machine's simulator may not reach the asked rate), its CPU seconds
per MB received, the WebSocket bytes per second and the loss it reports (gap notices / unaccounted). Prints per rate the median and spread over the rounds and the ratio
view/subscribe of CPU seconds per second.

  python Benchmarks/view_bench.py [--tributary .build/release/tributary] [--rounds 3] [--seconds 5]
"""
import argparse
import os
import re
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "Interop"))
import test_view as tv  # noqa: E402  (process and WebSocket helpers)

CHANNELS = 8
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(process, seconds, client=None):
    time.sleep(1.5)  # warm-up: session open, Welch and readings running
    c0, t0 = cpu_seconds(process.pid), time.monotonic()
    received, stream = 0, []
    if client is not None:
        deadline = t0 + seconds
        client.settimeout(0.5)
        buffer = b""
        while time.monotonic() < deadline:
            try:
                chunk = client.recv(1 << 20)
            except OSError:
                continue
            if not chunk:
                break
            received += len(chunk)
            buffer += chunk
            # Acknowledge each complete binary message (opcode 2), as the page does.
            while (frame := tv.next_frame(buffer)) is not None:
                opcode, payload, buffer = frame
                if opcode == 2:
                    tv.websocket_text(client, '{"type":"ack"}')
                    stream.append(struct.unpack_from("<d", payload, 32)[0])  # MB/s the view receives
    else:
        time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return (cpu_seconds(process.pid) - c0) / elapsed, received / elapsed, statistics.median(stream) if stream else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tributary", default=os.environ.get("TRIBUTARY", ".build/release/tributary"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rates", default="1,10,100", help="MB/s of stream")
    args = parser.parse_args()
    tv.TRIBUTARY = args.tributary
    print(f"{'MB/s':>6} {'received MB/s':>12} {'peer CPU s/s':>14} {'view CPU s/s':>14} {'view CPU s per MB':>18} {'ratio':>12} {'to browser KB/s':>16} {'lost/unacc.':>12}")
    for mbps in map(float, args.rates.split(",")):
        rate = mbps * 1e6 / 8 / CHANNELS
        block = max(100, int(rate / 100))  # 100 frames a second
        spec = f"id=1,name=Bench,rate={rate:g},channels={CHANNELS},freq=1000,amp=1,noise=0.01,block={block}"
        server = tv.Process("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", spec)
        port = int(server.wait_for("listening on ").rsplit(":", 1)[1])
        peer_cpu, view_cpu, ratios, browser, losses, received = [], [], [], [], [], []
        try:
            for _ in range(args.rounds):
                peer = subprocess.Popen([args.tributary, "subscribe", f"127.0.0.1:{port}", "--api-key", "k"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                p, _, _ = measure(peer, args.seconds)
                peer.terminate()
                peer.wait(timeout=20)
                view = tv.Process("view", f"127.0.0.1:{port}", "--api-key", "k", "--channels", f"0-{CHANNELS - 1}", "--http", "127.0.0.1:0")
                url = view.wait_for("view: ")
                http_port = int(url.split(":")[2].split("/")[0])
                status, client = tv.websocket_handshake("127.0.0.1", http_port, "/ws")
                v, bytes_per_s, got = measure(view.process, args.seconds, client)
                received.append(got)
                client.close()
                view.process.terminate()
                view.process.wait(timeout=20)
                stderr = view.process.stderr.read()
                view.process.stderr.close()
                m = re.search(r"(\d+) lost \(gap notices\), (\d+) unaccounted", stderr)
                losses.append(f"{m.group(1)}/{m.group(2)}" if m else "?")
                peer_cpu.append(p)
                view_cpu.append(v)
                ratios.append(v / p if p > 0 else float("inf"))
                browser.append(bytes_per_s / 1e3)
        finally:
            server.stop()

        def show(xs, digits=3):
            return f"{statistics.median(xs):.{digits}f}±{(max(xs) - min(xs)) / 2:.{digits}f}"
        got = statistics.median(received)
        print(f"{mbps:>6g} {show(received, 1):>12} {show(peer_cpu):>14} {show(view_cpu):>14} {statistics.median(view_cpu) / got:>18.4f} "
              f"{show(ratios, 2):>12} {show(browser, 1):>16} {','.join(losses):>12}")


if __name__ == "__main__":
    main()
