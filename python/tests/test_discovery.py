"""tributary.resolve and resolve:QUERY addresses (docs/PROTOCOL.md §9), inside a network namespace
the test makes (`ip netns`), never on the machine's real interfaces. Needs root (CI runs as root)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import unittest
import uuid

BIN = os.path.abspath(os.environ.get("TRIBUTARY", ".build/release/tributary"))
TIMEOUT = 20
IP = shutil.which("ip")


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Interop"))
from tool_process import network_namespaces_unusable  # noqa: E402 (the interop tests' helper)

SKIP = network_namespaces_unusable()


@unittest.skipIf(SKIP, SKIP)
class ResolveTest(unittest.TestCase):
    def setUp(self):
        self.ns = f"trbpy-{uuid.uuid4().hex[:8]}"
        subprocess.run([IP, "netns", "add", self.ns], check=True)
        for args in (["link", "set", "lo", "up"], ["link", "set", "lo", "multicast", "on"], ["route", "add", "224.0.0.0/4", "dev", "lo"]):
            subprocess.run([IP, "-n", self.ns, *args], check=True)
        self.servers = []

    def tearDown(self):
        for process in self.servers:
            process.terminate()
            process.communicate(timeout=TIMEOUT)
        subprocess.run([IP, "netns", "del", self.ns])

    def serve(self, name, device):
        process = subprocess.Popen([IP, "netns", "exec", self.ns, BIN, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k",
                                    "--description", name, "--simulate", device], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        self.servers.append(process)
        endpoint = None
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            self.assertTrue(line, "serve ended early")
            if line.startswith("listening on "):
                endpoint = line.split()[-1]
            if line.startswith("answering discovery queries"):
                return endpoint
        self.fail("serve never answered discovery queries")

    def in_namespace(self, body):
        """Runs `body` (Python using the tributary package) in the namespace; returns its JSON output."""
        script = "import json, tributary\n" + textwrap.dedent(body)
        result = subprocess.run([IP, "netns", "exec", self.ns, sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=TIMEOUT, env=dict(os.environ))
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_resolve_lists_the_publishers_and_a_resolve_address_subscribes(self):
        eeg = self.serve("amp", "id=3,name=EEG-amp,channels=3,rate=250,bits=16,unit=uV")
        self.serve("plate", "id=1,name=force,channels=1,rate=100")
        found = self.in_namespace("print(json.dumps(tributary.resolve()))")
        self.assertEqual([p["name"] for p in found], ["amp", "plate"])
        amp = found[0]
        self.assertEqual((amp["address"], amp["auth"]), (eeg, "key"))
        source = amp["sources"][0]
        self.assertEqual((source["id"], source["device"], source["channels"], source["rate"], source["sample_type"], source["unit"]),
                         (3, "EEG-amp", 3, 250.0, "int16", "uV"))
        self.assertEqual(len(source["channel_names"]), 3)
        self.assertEqual([p["name"] for p in self.in_namespace("print(json.dumps(tributary.resolve('source=EEG-*', timeout=0.5)))")],
                         ["amp"])
        received = self.in_namespace("""
            with tributary.subscribe("resolve:name=plate", api_key="k") as sub:
                kinds = [p.kind for p in sub.packages(count=3)]
                print(json.dumps({"sources": sub.sources, "kinds": kinds}))
        """)
        self.assertEqual([s["id"] for s in received["sources"]], [1])
        self.assertIn("analog", received["kinds"])
        errors = self.in_namespace("""
            out = {}
            for query in ("resolve:", "resolve:colour=red", "resolve:name=nobody"):
                try:
                    tributary.subscribe(query, api_key="k")
                except tributary.TributaryError as e:
                    out[query] = [type(e).__name__, str(e)]
            try:
                tributary.resolve(timeout=0)
            except ValueError as e:
                out["timeout"] = str(e)
            print(json.dumps(out))
        """)
        self.assertEqual(errors["resolve:"][0], "CaptureIOError")
        self.assertIn("2 publishers match", errors["resolve:"][1])
        self.assertIn("'amp'", errors["resolve:"][1])
        self.assertEqual(errors["resolve:colour=red"][0], "ArgumentError")
        self.assertIn("no publisher answered", errors["resolve:name=nobody"][1])
        self.assertIn("[0.05, 3600]", errors["timeout"])


if __name__ == "__main__":
    unittest.main()
