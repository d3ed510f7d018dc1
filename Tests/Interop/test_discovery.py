"""Discovery (issue 41, docs/PROTOCOL.md §9): `serve` answers multicast queries, `resolve` lists the
publishers, `resolve:QUERY` stands for an ADDRESS.

Everything runs in network namespaces the tests create (`ip netns`), never on the machine's real
interfaces: one namespace whose loopback carries multicast, or two joined by a veth pair, each a
"host". Needs root (CI runs as root); skipped with the reason otherwise.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import unittest
import uuid

from tool_process import TIMEOUT, TRIBUTARY, network_namespaces_unusable

IP = shutil.which("ip")


SKIP = network_namespaces_unusable()



def assert_subscribed(test, namespace, query, name):
    """`subscribe resolve:QUERY` for a second, run in `namespace`, reaches the publisher described
    `name` and receives analog data."""
    result = namespace.tool("subscribe", f"resolve:{query}", "--api-key", "k", "--duration", "1")
    test.assertEqual(result.returncode, 0, result.stderr)
    test.assertIn(f"subscribed to '{name}'", result.stderr)
    test.assertIn("analog ", result.stdout)

class Namespace:
    """A network namespace whose loopback is up and (unless `lo_multicast` is False, as Linux's
    default) carries multicast, with a route for 224.0.0.0/4."""

    def __init__(self, lo_multicast=True):
        self.name = f"trb-{uuid.uuid4().hex[:8]}"
        self.run_ip("netns", "add", self.name)
        self.ip("link", "set", "lo", "up")
        if lo_multicast:
            self.ip("link", "set", "lo", "multicast", "on")
            self.ip("route", "add", "224.0.0.0/4", "dev", "lo")
        self.processes = []

    @staticmethod
    def run_ip(*args):
        subprocess.run([IP, *args], check=True, capture_output=True, text=True)

    def ip(self, *args):
        self.run_ip("-n", self.name, *args)

    def command(self, *args):
        return [IP, "netns", "exec", self.name, *map(str, args)]

    def tool(self, *args, timeout=TIMEOUT):
        return subprocess.run(self.command(TRIBUTARY, *args), capture_output=True, text=True, timeout=timeout)

    def serve(self, *args):
        """`serve` in the namespace; returns (process, its bound endpoint) once it answers queries."""
        process = subprocess.Popen(self.command(TRIBUTARY, "serve", "--api-key", "k", *args), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        self.processes.append(process)
        return process

    @staticmethod
    def wait_ready(process, announce=True):
        endpoint = None
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise AssertionError(f"serve ended: {process.stderr.read()}")
            if line.startswith("listening on "):
                endpoint = line.split()[-1]
                if not announce:
                    return endpoint
            if line.startswith("answering discovery queries"):
                return endpoint
        raise AssertionError("serve never said it answers discovery queries")

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
        subprocess.run([IP, "netns", "del", self.name], capture_output=True)


@unittest.skipIf(SKIP, SKIP)
class DiscoveryInOneNamespaceTest(unittest.TestCase):
    def setUp(self):
        self.ns = Namespace()

    def tearDown(self):
        self.ns.close()

    def resolve(self, *args, timeout="1"):
        result = self.ns.tool("resolve", "--json", "--timeout", timeout, *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_resolve_finds_32_publishers_within_one_second_with_their_descriptions(self):
        expected = {}
        processes = []
        for n in range(32):
            bind = "tcp://127.0.0.1:0" if n % 2 else "tcp://*:0"
            process = self.ns.serve("--bind", bind, "--description", f"pub-{n:02d}",
                                    "--simulate", f"id={n + 1},name=dev-{n},channels={1 + n % 3},rate={100 + n},block=50")
            processes.append((n, process))
        for n, process in processes:
            endpoint = Namespace.wait_ready(process)
            expected[f"pub-{n:02d}"] = (n, endpoint.replace("0.0.0.0", "127.0.0.1"))
        started = time.monotonic()
        found = self.resolve()
        elapsed = time.monotonic() - started
        self.assertLess(elapsed, 3, "resolve --timeout 1 took too long")
        self.assertEqual(sorted(p["name"] for p in found), sorted(expected))
        for p in found:
            n, address = expected[p["name"]]
            self.assertEqual(p["address"], address)
            self.assertEqual(p["auth"], "key")
            self.assertEqual(p["host"], socket.gethostname())
            self.assertEqual(len(p["sources"]), 1)
            s = p["sources"][0]
            self.assertEqual((s["id"], s["device"], s["channels"], s["rate"], s["sample_type"], s["unit"]),
                             (n + 1, f"dev-{n}", 1 + n % 3, 100.0 + n, "float64", "V"))
            self.assertEqual(len(s["channel_names"]), 1 + n % 3)
        # A query is answered only by the publishers it matches.
        self.assertEqual([p["name"] for p in self.resolve("name=pub-1*")], [f"pub-{n}" for n in range(10, 20)])
        self.assertEqual([p["name"] for p in self.resolve("source=DEV-7")], ["pub-07"])

    def test_no_announce_is_silent(self):
        quiet = self.ns.serve("--bind", "tcp://*:0", "--description", "quiet", "--no-announce", "--simulate", "id=1,rate=100")
        loud = self.ns.serve("--bind", "tcp://*:0", "--description", "loud", "--simulate", "id=1,rate=100")
        Namespace.wait_ready(quiet, announce=False)
        Namespace.wait_ready(loud)
        self.assertEqual([p["name"] for p in self.resolve()], ["loud"])
        result = self.ns.tool("subscribe", "resolve:name=quiet", "--api-key", "k", "--duration", "1")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("no publisher answered within 1.0 s", result.stderr)

    def test_python_and_c_publishers_answer_as_serve_does(self):
        """Issue 40/41: a publisher opened through the C library (here from Python) answers discovery
        queries with its description and the sources added since; announce=False stays silent;
        tributary_publisher_discovery's arguments are checked."""
        script = (
            "import sys, tributary\n"
            "pub = tributary.Publisher('tcp://127.0.0.1:0', api_key='k', description=sys.argv[1], announce=sys.argv[2] == '1')\n"
            "pub.add_source(id=7, name='py-daq', rate=500, channels=['a', 'b'], unit='mV', range=(-1, 1), dtype='int16', scale=0.001)\n"
            "print('ready', pub.endpoint, flush=True)\n"
            "sys.stdin.readline()\n"
            "pub.close()\n")
        processes = []
        for name, announce in [("py-loud", "1"), ("py-quiet", "0")]:
            process = subprocess.Popen(self.ns.command(sys.executable, "-c", script, name, announce), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
            processes.append(process)
            self.ns.processes.append(process)
            line = process.stdout.readline()
            self.assertTrue(line.startswith("ready tcp://127.0.0.1:"), process.stderr.read() if not line else line)
            process.endpoint = line.split()[1]
        found = self.resolve()
        self.assertEqual([p["name"] for p in found], ["py-loud"])
        [source] = found[0]["sources"]
        self.assertEqual(found[0]["address"], processes[0].endpoint)
        self.assertEqual((source["id"], source["device"], source["channels"], source["channel_names"], source["unit"],
                          source["rate"], source["sample_type"]), (7, "py-daq", 2, ["a", "b"], "mV", 500.0, "int16"))
        result = self.ns.tool("subscribe", "resolve:name=py-loud", "--api-key", "k", "--json", "--duration", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn('"device_name":"py-daq"', result.stdout.replace(" ", ""))
        for process in processes:
            process.communicate("\n", timeout=TIMEOUT)
            self.assertEqual(process.returncode, 0)
        bad = subprocess.run([sys.executable, "-c", "import tributary\n"
                              "for kw in [dict(announce_port=0), dict(announce_ttl=256), dict(announce_group='10.0.0.1'), dict(announce=1)]:\n"
                              "    try:\n"
                              "        tributary.Publisher('tcp://127.0.0.1:0', api_key='k', **kw)\n"
                              "    except (ValueError, TypeError, tributary.TributaryError) as e:\n"
                              "        print(type(e).__name__, e)\n"],
                             capture_output=True, text=True, timeout=TIMEOUT, env=os.environ)
        lines = bad.stdout.splitlines()
        self.assertEqual(len(lines), 4, bad.stdout + bad.stderr)
        self.assertIn("announce_port", lines[0])
        self.assertIn("announce_ttl", lines[1])
        self.assertIn("'10.0.0.1' is not an IPv4 multicast address", lines[2])
        self.assertIn("announce must be True or False", lines[3])

    def test_a_curve_publisher_says_curve_and_announces_no_key(self):
        import tempfile
        with tempfile.TemporaryDirectory() as directory:
            keys = os.path.join(directory, "publisher")
            made = subprocess.run([TRIBUTARY, "keygen", "--out", keys], capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(made.returncode, 0, made.stderr)
            process = subprocess.Popen(self.ns.command(TRIBUTARY, "serve", "--api-key", "secret-key-value", "--bind", "tcp://*:0",
                                                       "--description", "sealed", "--curve-secret", keys + ".key",
                                                       "--curve-accept-any", "--simulate", "id=1,rate=100"),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.ns.processes.append(process)
            Namespace.wait_ready(process)
            result = self.ns.tool("resolve", "--json")
            self.assertEqual([(p["name"], p["auth"]) for p in json.loads(result.stdout)], [("sealed", "curve")])
            self.assertNotIn("secret-key-value", result.stdout)

    def test_subscribe_with_a_resolve_address_and_an_ambiguous_one(self):
        processes = [self.ns.serve("--bind", "tcp://127.0.0.1:0", "--description", name, "--simulate", f"id=4,name={name}-dev,rate=1000")
                     for name in ("daq-a", "daq-b")]
        endpoints = [Namespace.wait_ready(p) for p in processes]
        assert_subscribed(self, self.ns, "name=daq-b", "daq-b")
        ambiguous = self.ns.tool("subscribe", "resolve:name=daq-*", "--api-key", "k", "--duration", "1")
        self.assertEqual(ambiguous.returncode, 1)
        self.assertIn("2 publishers match, expected exactly one", ambiguous.stderr)
        for name, endpoint in zip(("daq-a", "daq-b"), endpoints):
            self.assertIn(f"'{name}'", ambiguous.stderr)
            self.assertIn(endpoint, ambiguous.stderr)
        # The same reader serves record, monitor and bench; a malformed query is a usage error (2).
        bad = self.ns.tool("record", "resolve:colour=red", "--api-key", "k", "--out", "/nonexistent/x.tcap")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("'colour' is not name, host, source or type", bad.stderr)

    def test_hostile_queries_are_ignored_and_answers_are_rate_limited(self):
        process = self.ns.serve("--bind", "tcp://127.0.0.1:0", "--description", "target", "--simulate", "id=1,rate=100")
        Namespace.wait_ready(process)
        script = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
s.bind(("127.0.0.1", 0))
group = ("239.255.84.82", 16580)
hostile = [b"", b"\xff" * 2000, b"TRIBUTARY-QUERY 1\nquery id=99999999999999999999\n", b"TRIBUTARY-QUERY 1\nquery id=1 match=%zz\n",
           b"TRIBUTARY-QUERY 1\nquery id=1 id=2\n", b"TRIBUTARY-QUERY 1\n" + b"query id=1\n" * 300, b"TRIBUTARY-QUERY 1\nquery id=1"]
for datagram in hostile:
    s.sendto(datagram, group)
s.settimeout(0.5)
try:
    print("answered hostile:", s.recvfrom(65536))
    sys.exit(1)
except socket.timeout:
    pass
# 200 valid queries at once: at most the burst (20) plus what refills meanwhile are answered.
for i in range(200):
    s.sendto(b"TRIBUTARY-QUERY 1\nquery id=%d\n" % (i + 1), group)
answers = 0
s.settimeout(1)
try:
    while True:
        data, _ = s.recvfrom(65536)
        assert data.startswith(b"TRIBUTARY-ANSWER 1\npublisher query="), data
        answers += 1
except socket.timeout:
    pass
print(answers)
"""
        result = subprocess.run(self.ns.command("python3", "-c", script), capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        answers = int(result.stdout.split()[-1])
        self.assertGreaterEqual(answers, 20)
        self.assertLessEqual(answers, 40)
        self.assertIsNone(process.poll(), "serve ended on hostile queries")
        time.sleep(2.1)  # the bucket refills
        self.assertEqual([p["name"] for p in self.resolve()], ["target"])


@unittest.skipIf(SKIP, SKIP)
class DiscoveryAcrossTwoHostsTest(unittest.TestCase):
    """Two namespaces joined by a veth pair: 10.231.0.1 (the publishers' host, whose loopback carries
    no multicast, as on a stock Linux machine) and 10.231.0.2."""

    def setUp(self):
        self.a = Namespace(lo_multicast=False)
        self.b = Namespace()
        veth = f"tv{uuid.uuid4().hex[:8]}"
        Namespace.run_ip("link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b")
        Namespace.run_ip("link", "set", veth + "a", "netns", self.a.name)
        Namespace.run_ip("link", "set", veth + "b", "netns", self.b.name)
        for ns, end, address in ((self.a, veth + "a", "10.231.0.1/24"), (self.b, veth + "b", "10.231.0.2/24")):
            ns.ip("addr", "add", address, "dev", end)
            ns.ip("link", "set", end, "up")

    def tearDown(self):
        self.a.close()
        self.b.close()  # the veth pair goes with its namespaces

    def test_a_loopback_publisher_is_not_found_from_the_other_host(self):
        local = self.a.serve("--bind", "tcp://127.0.0.1:0", "--description", "local-only", "--simulate", "id=1,rate=100")
        shared = self.a.serve("--bind", "tcp://*:0", "--description", "everywhere", "--simulate", "id=2,name=force,rate=100")
        Namespace.wait_ready(local)
        port = Namespace.wait_ready(shared).rsplit(":", 1)[1]
        from_b = self.b.tool("resolve", "--json")
        self.assertEqual(from_b.returncode, 0, from_b.stderr)
        found = json.loads(from_b.stdout)
        self.assertEqual([(p["name"], p["address"]) for p in found], [("everywhere", f"tcp://10.231.0.1:{port}")])
        # On its own host the loopback publisher is found (the query comes through the veth, from the
        # host's own address: its loopback carries no multicast), at its loopback address.
        from_a = self.a.tool("resolve", "--json")
        self.assertEqual(sorted((p["name"], p["address"].split(":")[1]) for p in json.loads(from_a.stdout)),
                         [("everywhere", "//10.231.0.1"), ("local-only", "//127.0.0.1")])
        # The address an answer completes is one the other host can connect to.
        assert_subscribed(self, self.b, "source=force", "everywhere")
        refused = self.b.tool("subscribe", "resolve:name=local-only", "--api-key", "k", "--duration", "1")
        self.assertEqual(refused.returncode, 1)
        self.assertIn("no publisher answered", refused.stderr)


if __name__ == "__main__":
    unittest.main()
