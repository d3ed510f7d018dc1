"""Free-form properties of sources and channels (issue 40, item 6; PROTOCOL.md §5.19).

`serve --property` gives a simulated source and one of its channels key/value properties; a real
`record` keeps them, `inspect` shows them (text and --json), `export` writes them as TDMS
properties, HDF5 attributes and XDF `<desc>` entries, checked with npTDMS, h5py and pyxdf, and
`import` of each file brings them back. A replay keeps the capture's properties and sets
`--property` over them. Bounds and unknown sources or channels are usage errors.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from tool_process import TRIBUTARY, Serve

SERIAL = "SN-42 ü"
CAL = "2026-01-01=ok"  # a value may hold '='


def run(*args):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=60)


class Properties(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tributary-properties-")
        cls.capture = os.path.join(cls.dir, "p.tcap")
        serve = Serve("--simulate", "id=4,name=daq,rate=1000,channels=3", "--no-announce",
                      "--property", f"4:serial={SERIAL}", "--property", f"4:calibrated={CAL}",
                      "--property", "4:2:sensor=PCB 352C33", "--property", "4:2:gain=10",
                      "--property", "4:device_name=clash")
        try:
            result = run("record", serve.address, "--api-key", "k", "--out", cls.capture, "--duration", "1")
        finally:
            serve.stop(kill_if_hung=True)
        assert result.returncode == 0, result.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def inspect(self, path):
        result = run("inspect", path, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        return next(s for s in json.loads(result.stdout)["sources"] if s["channels"])

    def check_source(self, source):
        self.assertEqual(source["properties"], {"serial": SERIAL, "calibrated": CAL, "device_name": "clash"})
        self.assertEqual([c["properties"] for c in source["channels"]], [{}, {}, {"sensor": "PCB 352C33", "gain": "10"}])

    def test_inspect_shows_the_recorded_properties(self):
        self.check_source(self.inspect(self.capture))
        text = run("inspect", self.capture).stdout
        self.assertIn(f"properties: serial={SERIAL}, calibrated={CAL}, device_name=clash", text)
        self.assertIn("channel 2 (ai2", text)
        self.assertIn("sensor=PCB 352C33, gain=10", text)

    def export(self, fmt):
        out = os.path.join(self.dir, f"p.{fmt}")
        result = run("export", self.capture, "--format", fmt, "--out", out, "--force")
        self.assertEqual(result.returncode, 0, result.stderr)
        return out

    def imported(self, path):
        out = path + ".tcap"
        result = run("import", path, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return self.inspect(out)

    def test_tdms_round_trip(self):
        import nptdms
        path = self.export("tdms")
        group = nptdms.TdmsFile.read(path).groups()[0]
        self.assertEqual(group.properties["serial"], SERIAL)
        self.assertEqual(group.properties["calibrated"], CAL)
        self.assertEqual(group.properties["device_name"], "daq")  # the export's own name wins
        self.assertEqual(group.properties["property.device_name"], "clash")
        self.assertEqual(group.channels()[2].properties["sensor"], "PCB 352C33")
        self.assertNotIn("sensor", group.channels()[0].properties)
        self.check_source(self.imported(path))

    def test_hdf5_round_trip(self):
        import h5py
        path = self.export("hdf5")
        with h5py.File(path) as f:
            group = next(iter(f.values()))
            self.assertEqual(dict(group["properties"].attrs), {"serial": SERIAL, "calibrated": CAL, "device_name": "clash"})
            self.assertEqual(dict(group["properties/channel 2"].attrs), {"sensor": "PCB 352C33", "gain": "10"})
        self.check_source(self.imported(path))

    def test_xdf_round_trip(self):
        import pyxdf
        path = self.export("xdf")
        streams, _ = pyxdf.load_xdf(path)
        desc = streams[0]["info"]["desc"][0]
        source = {p["key"][0]: p["value"][0] for p in desc["properties"][0]["property"]}
        self.assertEqual(source, {"serial": SERIAL, "calibrated": CAL, "device_name": "clash"})
        channels = desc["channels"][0]["channel"]
        self.assertIsNone(channels[0].get("properties"))
        self.assertEqual({p["key"][0]: p["value"][0] for p in channels[2]["properties"][0]["property"]},
                         {"sensor": "PCB 352C33", "gain": "10"})
        self.check_source(self.imported(path))

    def test_replay_keeps_them_and_property_sets_over_them(self):
        serve = Serve("--replay", self.capture, "--speed", "max", "--no-announce", "--property", "4:serial=replaced",
                      "--property", "4:1:new=yes")
        out = os.path.join(self.dir, "replayed.tcap")
        try:
            result = run("record", serve.address, "--api-key", "k", "--out", out)
        finally:
            serve.stop(kill_if_hung=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        source = self.inspect(out)
        self.assertEqual(source["properties"], {"serial": "replaced", "calibrated": CAL, "device_name": "clash"})
        self.assertEqual(source["channels"][1]["properties"], {"new": "yes"})
        self.assertEqual(source["channels"][2]["properties"], {"sensor": "PCB 352C33", "gain": "10"})

    def test_bounds_and_mistakes_are_usage_errors(self):
        spec = "id=1,rate=100,channels=2"
        cases = {
            ("--property", "1:" + "k" * 257 + "=v"): "keys have 1 to 256",
            ("--property", "1:k=" + "v" * 16385): "at most 16384",
            ("--property", "1:=v"): "an empty key",
            ("--property", "1:k"): "no '='",
            ("--property", "0:k=v"): "no source id",
            ("--property", "2:k=v"): "there is no source 2",
            ("--property", "1:5:k=v"): "has no channel with index 5",
        }
        for args, message in cases.items():
            result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", spec, "--no-announce", *args)
            self.assertEqual(result.returncode, 2, (args[1][:40], result.stderr))
            self.assertIn(message, result.stderr)
        many = [a for k in range(1025) for a in ("--property", f"1:k{k}=v")]
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--simulate", spec, "--no-announce", *many)
        self.assertEqual(result.returncode, 2)
        self.assertIn("1025 properties; at most 1024", result.stderr)

    def test_captures_without_properties_are_unchanged(self):
        # The source without --property: its inspect objects say {} and no frame of kind 129 is recorded.
        serve = Serve("--simulate", "id=1,rate=1000,channels=1", "--no-announce")
        out = os.path.join(self.dir, "plain.tcap")
        try:
            result = run("record", serve.address, "--api-key", "k", "--out", out, "--duration", "0.5")
        finally:
            serve.stop(kill_if_hung=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        source = self.inspect(out)
        self.assertEqual(source["properties"], {})
        self.assertEqual(source["channels"][0]["properties"], {})
        packages = run("inspect", out, "--packages").stdout
        self.assertNotIn("properties", packages)


if __name__ == "__main__":
    unittest.main()
