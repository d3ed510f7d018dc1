"""Raw pyzmq DEALER -> ROUTER throughput over tcp://127.0.0.1: the anchor for ZMQRawSuite.

Same shape as the Swift side: one process, one context (1 I/O thread), the ROUTER receiving on the
main thread, the DEALER sending from a second thread with zero-copy sends (copy=False) of one
pre-built payload; the ROUTER receives with copy=False (frames, no bytes copied). Throughput is
counted from the first message received to the last. Prints one JSON object on its last line.
"""
import argparse
import json
import statistics
import threading
import time

import zmq


def one_run(context, messages, size):
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.RCVTIMEO, 10_000)
    router.bind("tcp://127.0.0.1:0")
    endpoint = router.getsockopt(zmq.LAST_ENDPOINT).decode()
    payload = bytes(size)

    def send():
        dealer = context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(endpoint)
        for _ in range(messages):
            dealer.send(payload, copy=False)
        # Wait for the receiver before closing, so that linger 0 drops nothing.
        done.wait(30)
        dealer.close()

    done = threading.Event()
    sender = threading.Thread(target=send)
    sender.start()
    router.recv_multipart(copy=False)
    start = time.perf_counter()
    for _ in range(messages - 1):
        router.recv_multipart(copy=False)
    elapsed = time.perf_counter() - start
    done.set()
    sender.join()
    router.close()
    return (messages - 1) * size / elapsed / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=4096)
    parser.add_argument("--size", type=int, default=65536)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    context = zmq.Context(io_threads=1)
    for _ in range(args.warmup):
        one_run(context, args.messages, args.size)
    runs = [one_run(context, args.messages, args.size) for _ in range(args.runs)]
    context.term()
    print(json.dumps({"mb_per_s_median": statistics.median(runs), "runs": runs,
                      "zmq": zmq.zmq_version(), "pyzmq": zmq.pyzmq_version()}))


if __name__ == "__main__":
    main()
