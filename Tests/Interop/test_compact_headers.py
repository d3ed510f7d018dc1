"""Compact header parts (docs/PROTOCOL.md §3.2) between `tributary serve` and a subscriber written from
the spec with pyzmq: a hello with flag bit 9 gets every frame of its session with a 32-byte header
part, which expands to the 40-byte header of §2; a hello without it gets the 40-byte header parts of
§3.1, from the same publisher at the same time. Both streams carry the same simulated samples.
"""
import struct
import time
import unittest

import numpy as np
import zmq

import wire_spec as w
from test_transport_cli import Server

DEVICE = "id=1,name=sim,rate=1000,channels=2,freq=50,amp=1,noise=0,block=100"


def subscribe(address, compact, frames=40):
    """Opens a session by hand, starts it, and returns [(header part size, header fields, payload)]."""
    context = zmq.Context()
    s = context.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 5000)
    s.connect(address)
    try:
        s.send(w.frame("hello", w.hello("k", "spec subscriber", timeout=10.0), timestamp_ns=time.time_ns(),
                       flags=w.COMPACT_HEADERS if compact else 0))
        # The welcome first; flag bit 9 on it: the publisher also reads compact header parts from us.
        first = s.recv_multipart()[0]
        welcome = w.parse_header(w.expand_compact(first) if len(first) == 32 else first[:40])
        assert welcome["kind"] == w.KINDS["welcome"], welcome
        assert bool(welcome["flags"] & w.COMPACT_HEADERS) == compact, welcome
        start = w.frame("start", b"", sequence=1)
        # The start in compact form where the welcome allows it: data only flows if the publisher read it.
        s.send(w.compact(start) if compact else start)
        received = [(len(first), welcome, b"")]
        while sum(1 for _, h, _ in received if h["kind"] == w.KINDS["analog"]) < frames:
            parts = s.recv_multipart()
            first = parts[0]
            header = w.parse_header(w.expand_compact(first) if len(first) == 32 else first[:40])
            payload = parts[1] if len(parts) == 2 else first[40:]
            assert len(payload) == header["payload_length"], (len(payload), header)
            received.append((len(first), header, payload))
        return received
    finally:
        s.close()
        context.term()


def analog_rows(payload):
    """The float64 matrix of an analog payload (PROTOCOL.md §5.3)."""
    channels, samples = struct.unpack_from("<II", payload, 0)
    first_sample, sample_format = struct.unpack_from("<QB", payload, 8)
    assert sample_format == 1, sample_format  # float64
    offset = 24 + channels * 4
    offset += -offset % 8
    return first_sample, np.frombuffer(payload, "<f8", channels * samples, offset).reshape(channels, samples)


class CompactHeaderTests(unittest.TestCase):
    def test_compact_and_full_header_sessions_side_by_side(self):
        server = Server("--simulate", DEVICE)
        try:
            compact = subscribe(server.address, compact=True)
            full = subscribe(server.address, compact=False)
        finally:
            server.stop()
        # Every frame of the compact session, the welcome first, has a 32-byte header part; none of the other's.
        self.assertEqual({size for size, _, _ in compact}, {32})
        self.assertEqual({size for size, _, _ in full}, {40})
        for received in (compact, full):
            kinds = [h["kind"] for _, h, _ in received]
            self.assertEqual(kinds[0], w.KINDS["welcome"])
            self.assertIn(w.KINDS["configuration"], kinds)
            sequences = [h["sequence"] for _, h, _ in received]
            self.assertEqual(sequences, list(range(len(sequences))))
        # The same simulated device: equal samples for equal sample numbers.
        rows = {}
        for received in (compact, full):
            for _, header, payload in received:
                if header["kind"] == w.KINDS["analog"]:
                    self.assertEqual(header["source_id"], 1)
                    first, matrix = analog_rows(payload)
                    self.assertEqual(matrix.shape, (2, 100))
                    if first in rows:
                        np.testing.assert_array_equal(rows[first], matrix)
                    rows[first] = matrix
        self.assertGreaterEqual(len(rows), 40)

    def test_compact_header_part_from_a_session_that_did_not_ask_is_a_malformed_frame(self):
        server = Server("--simulate", DEVICE)
        context = zmq.Context()
        s = context.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVTIMEO, 5000)
        try:
            s.connect(server.address)
            s.send(w.frame("hello", w.hello("k", "spec subscriber", timeout=10.0), timestamp_ns=time.time_ns()))
            welcome = w.parse_header(s.recv_multipart()[0][:40])
            self.assertEqual(welcome["kind"], w.KINDS["welcome"])
            self.assertFalse(welcome["flags"] & w.COMPACT_HEADERS)
            s.send(w.compact(w.frame("start", b"", sequence=1)))
            kinds = []
            while True:
                parts = s.recv_multipart()
                header = w.parse_header(parts[0][:40])
                kinds.append(header["kind"])
                if header["kind"] == w.KINDS["error"]:
                    payload = parts[1] if len(parts) == 2 else parts[0][40:]
                    code = struct.unpack_from("<I", payload, 0)[0]
                    self.assertEqual(code, 10)  # malformed frame (PROTOCOL.md §5.2)
                if header["kind"] == w.KINDS["close"]:
                    break
            self.assertIn(w.KINDS["error"], kinds)
            self.assertNotIn(w.KINDS["analog"], kinds)
        finally:
            s.close()
            context.term()
            server.stop()


if __name__ == "__main__":
    unittest.main()
