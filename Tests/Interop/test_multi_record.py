"""`tributary record A B C` (issue 41, item 3): several publishers recorded into one capture, one
session each, colliding source ids renumbered with each source's origin kept (docs/CAPTURE.md §6,
source-origin records), read back as one recording by `inspect`, `export`, `analyze` and Python.

Three captures are recorded first from simulated publishers (publisher A: source 1; B: sources 1
and 2; C: source 3), then replayed by three `serve --replay` publishers at once and recorded
together: the replays make every stream deterministic, so each source of the joint capture must be
bit for bit the source it replays, and the one of B's replay recorded alone.
"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import numpy as np
import pyxdf

from tool_process import TIMEOUT, TRIBUTARY, ScratchDirectory, ScratchTest, Serve, network_namespaces_unusable, tool

PYTHON_PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
LIBRARY = os.path.join(os.path.dirname(os.path.abspath(TRIBUTARY)), "libTributaryC.so")

# Publisher A: source 1; B: sources 1 and 2 (its 1 collides with A's); C: source 3 (int16 counts).
PUBLISHERS = {
    "a": ["--simulate", "id=1,name=amp-a,rate=1000,channels=2,block=50,noise=0.1,seed=1"],
    "b": ["--simulate", "id=1,name=force-b,rate=500,channels=1,block=25,noise=0.1,seed=2",
          "--simulate", "id=2,name=daq-b,rate=200,channels=3,block=20,noise=0.1,seed=3"],
    "c": ["--simulate", "id=3,name=eeg-c,rate=250,channels=2,block=25,bits=12,noise=0.1,seed=4"],
}
# (capture id in the joint recording) -> (publisher, its source id): B's 1 gets the lowest free id, 4.
MAPPING = {1: ("a", 1), 2: ("b", 2), 3: ("c", 3), 4: ("b", 1)}
ORDER = ["a", "b", "c"]


def export_npy(capture, source, out):
    tool("export", capture, "--format", "npy", "--source", source, "--out", out, "--force")
    return np.load(out)


def inspect_json(capture):
    return json.loads(tool("inspect", capture, "--json").stdout)


class MultiRecordTest(ScratchDirectory, unittest.TestCase):
    directory_prefix = "tributary-multirec-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The fixtures: each simulated publisher recorded alone for 2 s, all at once.
        publishers = {name: Serve("--no-announce", *args) for name, args in PUBLISHERS.items()}
        try:
            recorders = {name: subprocess.Popen([TRIBUTARY, "record", p.address, "--api-key", "k", "--duration", "2",
                                                 "--out", cls.path(f"{name}.tcap")], stderr=subprocess.PIPE, text=True)
                         for name, p in publishers.items()}
            for name, r in recorders.items():
                _, err = r.communicate(timeout=TIMEOUT)
                assert r.returncode == 0, err
        finally:
            for p in publishers.values():
                p.stop(kill_if_hung=True)
        # The three replays recorded together, and B's replay recorded alone.
        cls.joint, cls.joint_result, cls.addresses = cls.record_replays(ORDER, "joint.tcap")
        cls.alone, cls.alone_result, _ = cls.record_replays(["b"], "b-alone.tcap")
        cls.info = inspect_json(cls.joint)

    @classmethod
    def record_replays(cls, names, out):
        replays = [Serve("--no-announce", "--replay", cls.path(f"{n}.tcap"), "--linger", "0.5") for n in names]
        try:
            capture = cls.path(out)
            result = subprocess.run([TRIBUTARY, "record", *[r.address for r in replays], "--api-key", "k",
                                     "--duration", "60", "--out", capture], capture_output=True, text=True, timeout=90)
        finally:
            for r in replays:
                r.stop(kill_if_hung=True)
        return capture, result, {n: r.address for n, r in zip(names, replays)}

    def test_every_publisher_is_recorded_to_its_end_without_loss(self):
        r = self.joint_result
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("recorded", r.stderr)
        self.assertIn("from 3 publishers", r.stderr)
        self.assertNotIn("lost without a gap notice", r.stderr)
        self.assertNotIn("FAILED", r.stderr)
        for n, name in enumerate(ORDER):
            line = next(line for line in r.stderr.splitlines() if line.startswith(f"publisher {n + 1} ("))
            self.assertIn(self.addresses[name], line)
            self.assertIn("0 gaps (0 frames missing)", line)
            self.assertIn("ended: ", line)
        self.assertIn("sources 1 as 4, 2", r.stderr)
        self.assertEqual(self.info["gaps"], [])
        self.assertEqual(self.info["damage"], [])
        self.assertTrue(self.info["footer"])

    def test_each_source_is_bit_exact_against_its_publisher_alone(self):
        fixtures = {name: inspect_json(self.path(f"{name}.tcap")) for name in PUBLISHERS}
        by_id = {s["id"]: s for s in self.info["sources"]}
        self.assertEqual(sorted(by_id), sorted(MAPPING))
        for capture_id, (name, own_id) in MAPPING.items():
            with self.subTest(source=capture_id):
                fixture = next(s for s in fixtures[name]["sources"] if s["id"] == own_id)
                joint = by_id[capture_id]
                for key in ("name", "samples", "frames", "rate", "channels"):
                    self.assertEqual(joint[key], fixture[key], key)
                self.assertGreater(joint["samples"], 0)
                expected = export_npy(self.path(f"{name}.tcap"), own_id, self.path("expected.npy"))
                got = export_npy(self.joint, capture_id, self.path("got.npy"))
                self.assertEqual(got.dtype, expected.dtype)
                self.assertEqual(got.tobytes(), expected.tobytes())
        # B's replay recorded alone holds exactly what the joint recording holds of B (under B's ids).
        for capture_id, own_id in ((4, 1), (2, 2)):
            alone = export_npy(self.alone, own_id, self.path("alone.npy"))
            self.assertEqual(export_npy(self.joint, capture_id, self.path("got.npy")).tobytes(), alone.tobytes())

    def test_the_mapping_is_in_inspect_and_python(self):
        origins = {o["source_id"]: o for o in self.info["source_origins"]}
        self.assertEqual(sorted(origins), sorted(MAPPING))
        for capture_id, (name, own_id) in MAPPING.items():
            o = origins[capture_id]
            self.assertEqual((o["publisher_index"], o["address"], o["publisher_source_id"]),
                             (ORDER.index(name), self.addresses[name], own_id))
            source = next(s for s in self.info["sources"] if s["id"] == capture_id)
            self.assertEqual(source["origin"], o)
        text = tool("inspect", self.joint).stdout
        self.assertIn(f"origin: publisher 2 ({self.addresses['b']}, 'tributary serve'), its source 1", text)
        self.assertIn("4 source-origin records", text)
        # Python's Source.origin, through the C library's capture info.
        script = ("import json, sys, tributary\n"
                  "with tributary.open(sys.argv[1]) as cap:\n"
                  "    print(json.dumps({s.id: s.origin and s.origin.__dict__ for s in cap.sources}))\n")
        env = dict(os.environ, PYTHONPATH=PYTHON_PACKAGE, TRIBUTARY_LIBRARY=LIBRARY)
        result = subprocess.run([sys.executable, "-c", script, self.joint], capture_output=True, text=True, env=env,
                                timeout=TIMEOUT)
        self.assertEqual(result.returncode, 0, result.stderr)
        python = {int(k): v for k, v in json.loads(result.stdout).items()}
        for capture_id, (name, own_id) in MAPPING.items():
            self.assertEqual(python[capture_id], {"publisher_index": ORDER.index(name), "address": self.addresses[name],
                                                  "publisher": "tributary serve", "publisher_source_id": own_id})
        # A recording of one publisher has no origins: it is laid out as before.
        alone = inspect_json(self.alone)
        self.assertEqual(alone["source_origins"], [])
        self.assertTrue(all(s["origin"] is None for s in alone["sources"]))
        self.assertNotIn("source-origin", tool("inspect", self.alone).stdout)

    def test_clock_offsets_are_recorded_per_publisher(self):
        ids = {n: sorted(c for c, (name, _) in MAPPING.items() if name == pub) for n, pub in enumerate(ORDER)}
        records = self.info["clock_offsets"]
        for n, expected in ids.items():
            with self.subTest(publisher=n + 1):
                mine = [r for r in records if sorted(r["sources"]) == expected]
                self.assertGreaterEqual(len(mine), 1, records)
                self.assertTrue(all(abs(r["offset_s"]) < 0.05 for r in mine), mine)
        # Every record names one publisher's sources, never none (which would mean every source).
        self.assertTrue(all(sorted(r["sources"]) in ids.values() for r in records), records)

    def test_export_and_analyze_read_it_as_one_recording(self):
        xdf = self.path("joint.xdf")
        tool("export", self.joint, "--format", "xdf", "--out", xdf, "--force")
        streams, _ = pyxdf.load_xdf(xdf, synchronize_clocks=False, dejitter_timestamps=False)
        by_name = {s["info"]["name"][0]: s for s in streams}
        expected = {s["name"]: s["samples"] for s in self.info["sources"]}
        self.assertEqual(sorted(by_name), sorted(expected))
        for name, samples in expected.items():
            self.assertEqual(len(by_name[name]["time_series"]), samples, name)
        (report,) = [json.loads(line) for line in tool("analyze", self.joint, "--json").stdout.splitlines() if line.strip()]
        analysed = {s["id"]: (s["name"], s["channels"][0]["samples"]) for s in report["sources"]}
        self.assertEqual(analysed, {s["id"]: (s["name"], s["samples"]) for s in self.info["sources"]})
        self.assertEqual(sorted(analysed), sorted(MAPPING))


class MultiRecordFailureTest(ScratchTest, unittest.TestCase):
    directory_prefix = "tributary-multirec-"

    def test_a_publisher_dying_does_not_stop_the_others(self):
        publishers = [Serve("--no-announce", "--simulate", f"id=1,name=dev-{n},rate=1000,channels=2,block=50")
                      for n in range(3)]
        try:
            capture = self.path("lab.tcap")
            recorder = subprocess.Popen([TRIBUTARY, "record", *[p.address for p in publishers], "--api-key", "k",
                                         "--duration", "4", "--out", capture], stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            publishers[1].process.send_signal(signal.SIGKILL)
            _, err = recorder.communicate(timeout=TIMEOUT)
        finally:
            for p in publishers:
                p.stop(kill_if_hung=True)
        self.assertEqual(recorder.returncode, 1, err)
        lines = err.splitlines()
        line = {n: next(x for x in lines if x.startswith(f"publisher {n} (")) for n in (1, 2, 3)}
        self.assertIn("FAILED: error 5", line[2])
        self.assertIn("ended: --duration elapsed", line[1])
        self.assertIn("ended: --duration elapsed", line[3])
        self.assertIn(f"1 publisher of 3 failed (2: {publishers[1].address})", err)
        info = inspect_json(capture)
        self.assertTrue(info["footer"])
        spans = {s["id"]: (s["last_time_ns"] - s["first_time_ns"]) / 1e9 for s in info["sources"]}
        # Source 0 holds the error frame of the lost session (the publishers' packages of no source).
        self.assertEqual(sorted(spans), [0, 1, 2, 3])
        self.assertGreater(spans[1], 3.5)
        self.assertGreater(spans[3], 3.5)
        self.assertLess(spans[2], 3.0)
        self.assertGreater(spans[2], 0.5)

    def test_sigint_stops_every_publisher_and_closes_the_capture(self):
        publishers = [Serve("--no-announce", "--simulate", f"id={n + 1},name=dev-{n},rate=500,block=25") for n in range(2)]
        try:
            capture = self.path("lab.tcap")
            recorder = subprocess.Popen([TRIBUTARY, "record", *[p.address for p in publishers], "--api-key", "k",
                                         "--out", capture], stderr=subprocess.PIPE, text=True)
            time.sleep(2)
            recorder.send_signal(signal.SIGINT)
            _, err = recorder.communicate(timeout=TIMEOUT)
        finally:
            for p in publishers:
                p.stop(kill_if_hung=True)
        self.assertEqual(recorder.returncode, 0, err)
        self.assertEqual(err.count("; ended: interrupted"), 2, err)
        info = inspect_json(capture)
        self.assertTrue(info["footer"])
        self.assertEqual([(s["id"], s["name"]) for s in info["sources"]], [(1, "dev-0"), (2, "dev-1")])
        self.assertEqual([o["publisher_source_id"] for o in info["source_origins"]], [1, 2])  # nothing renumbered

    def test_the_same_publisher_twice_is_refused(self):
        publisher = Serve("--no-announce", "--simulate", "id=1,rate=100")
        try:
            capture = self.path("twice.tcap")
            host_port = publisher.address.removeprefix("tcp://")
            result = subprocess.run([TRIBUTARY, "record", publisher.address, "tcp://127.0.0.2:1", host_port,
                                     "--api-key", "k", "--duration", "1", "--out", capture],
                                    capture_output=True, text=True, timeout=TIMEOUT)
        finally:
            publisher.stop(kill_if_hung=True)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(f"ADDRESS 3 ('{host_port}') names the publisher ADDRESS 1", result.stderr)
        self.assertEqual(os.listdir(self.directory), [])

    def test_a_publisher_unreachable_at_the_start_fails_before_any_file(self):
        publisher = Serve("--no-announce", "--simulate", "id=1,rate=100")
        try:
            capture = self.path("x.tcap")
            result = subprocess.run([TRIBUTARY, "record", publisher.address, "tcp://127.0.0.1:9", "--api-key", "k",
                                     "--timeout", "2", "--duration", "1", "--out", capture],
                                    capture_output=True, text=True, timeout=TIMEOUT)
        finally:
            publisher.stop(kill_if_hung=True)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("publisher 2 (tcp://127.0.0.1:9)", result.stderr)
        self.assertIn("nothing was recorded", result.stderr)
        self.assertEqual(os.listdir(self.directory), [])


SKIP = network_namespaces_unusable()


@unittest.skipIf(SKIP, SKIP)
class MultiRecordResolveTest(ScratchTest, unittest.TestCase):
    """`resolve:QUERY` as ADDRESSes, in a network namespace whose loopback carries multicast."""

    directory_prefix = "tributary-multirec-"

    def setUp(self):
        super().setUp()
        from test_discovery import Namespace

        self.ns = Namespace()
        self.processes = [self.ns.serve("--bind", "tcp://127.0.0.1:0", "--description", name,
                                        "--simulate", f"id=1,name={name}-dev,rate=200,block=20")
                          for name in ("lab-a", "lab-b")]
        self.endpoints = [Namespace.wait_ready(p) for p in self.processes]

    def tearDown(self):
        self.ns.close()
        super().tearDown()

    def test_resolve_addresses(self):
        out = self.path("lab.tcap")
        # Two matches for one resolve: refused, listing both, before any file.
        result = self.ns.tool("record", "resolve:name=lab-*", "resolve:name=lab-b", "--api-key", "k",
                              "--duration", "1", "--out", out)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("lab-a", result.stderr)
        self.assertIn("lab-b", result.stderr)
        self.assertEqual(os.listdir(self.directory), [])
        # A resolve that finds a publisher named already: refused.
        result = self.ns.tool("record", self.endpoints[0], "resolve:name=lab-a", "--api-key", "k",
                              "--duration", "1", "--out", out)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("named already", result.stderr)
        # One match each: both recorded, their source 1s as 1 and 2.
        result = self.ns.tool("record", "resolve:name=lab-a", "resolve:name=lab-b", "--api-key", "k",
                              "--duration", "1.5", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        info = json.loads(self.ns.tool("inspect", out, "--json").stdout)
        origins = {o["source_id"]: (o["publisher"], o["address"], o["publisher_source_id"]) for o in info["source_origins"]}
        self.assertEqual(origins, {1: ("lab-a", self.endpoints[0], 1), 2: ("lab-b", self.endpoints[1], 1)})
        self.assertEqual(sorted(s["name"] for s in info["sources"]), ["lab-a-dev", "lab-b-dev"])


if __name__ == "__main__":
    unittest.main()
