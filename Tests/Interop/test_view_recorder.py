"""The recorder in the browser (issue 41 item 4, docs/VIEW.md §6): `view --record-dir DIR` lists the
publishers discovery finds, records the ticked streams into one capture in DIR and shows each
stream's rate, clock offset and loss while it records.

Everything runs in a network namespace this test makes (its loopback up and carrying multicast, as
the discovery tests' namespaces), never on the machine's interfaces: the test's own thread enters it
(unshare(CLONE_NEWNET)), so the publishers, the view, chromedriver and Chromium it starts are all
in it; it leaves again at the end. Two `serve --simulate` publishers whose source ids collide
(both 1) announce themselves; the page (headless Chromium) finds them, ticks a stream of each,
records 5 s and stops; `inspect --json` then finds both sources, with data, in the capture, the
second renumbered as `record A B` does. The refusals are asked over plain HTTP.
"""
import ctypes
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from browser import chromium, wait_until
from tool_process import TIMEOUT, Serve, ToolProcess, network_namespaces_unusable, tool

SKIP = network_namespaces_unusable()
CLONE_NEWNET = 0x40000000
IP = shutil.which("ip") or "/usr/sbin/ip"
PUBLISHERS = {
    "a": "id=1,name=amp-a,rate=1000,channels=2,block=50,noise=0.1,seed=1",
    "b": "id=1,name=force-b,rate=500,channels=1,block=25,noise=0.1,seed=2",
}


class LoopbackNamespace:
    """Moves the calling thread (and so every process it starts afterwards) into a new network
    namespace whose loopback is up and carries multicast; `close` moves it back."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        if self.libc.unshare(CLONE_NEWNET) != 0:
            os.close(self.home)
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        for args in (["link", "set", "lo", "up"], ["link", "set", "lo", "multicast", "on"],
                     ["route", "add", "224.0.0.0/4", "dev", "lo"]):
            subprocess.run([IP, *args], check=True, capture_output=True)

    def close(self):
        if self.libc.setns(self.home, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back to the test's network namespace")
        os.close(self.home)


def request(port, method, path, body=None, content_type="application/json", headers=None):
    """(status, parsed JSON body) of one request to the view at 127.0.0.1:`port`."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    all_headers = dict(headers or {})
    if data is not None:
        if content_type:
            all_headers["Content-Type"] = content_type
        all_headers["Content-Length"] = str(len(data))
    c.request(method, path, body=data, headers=all_headers)
    r = c.getresponse()
    raw = r.read()
    c.close()
    try:
        return r.status, json.loads(raw)
    except ValueError:
        return r.status, raw.decode(errors="replace")


def view(publisher, *extra):
    p = ToolProcess("view", publisher, "--api-key", "k", "--http", "127.0.0.1:0", *extra)
    p.url = p.value_after("view: ")
    p.port = int(p.url.split(":")[2].split("/")[0])
    return p


@unittest.skipIf(SKIP, SKIP)
class RecorderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.namespace = LoopbackNamespace()
        cls.directory = tempfile.mkdtemp(prefix="tributary-recorder-")
        cls.publishers = {}
        cls.views = []
        try:
            cls.publishers = {n: Serve("--simulate", spec) for n, spec in PUBLISHERS.items()}
            cls.view = view(cls.publishers["a"].address, "--record-dir", cls.directory)
            cls.views.append(cls.view)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for v in cls.views:
            v.stop(kill_if_hung=True)
        for p in cls.publishers.values():
            p.stop(kill_if_hung=True)
        shutil.rmtree(cls.directory, ignore_errors=True)
        cls.namespace.close()

    def resolve_both(self, port):
        """Asks discovery until both publishers answer; their descriptions by address."""
        wanted = {p.address for p in self.publishers.values()}

        def found():
            status, body = request(port, "POST", "/recorder/resolve", {"timeout": 0.5})
            self.assertEqual(status, 200, body)
            got = {p["address"]: p for p in body["publishers"]}
            return got if wanted <= set(got) else None
        return wait_until(found, what="both publishers found by discovery")

    def test_1_the_page_records_two_publishers(self):
        driver = chromium(logs=True)
        try:
            driver.get(self.view.url)
            js = driver.execute_script
            wait_until(lambda: js("return window.tributaryView.recorder.enabled"), what="the recorder section")
            addresses = [self.publishers[n].address for n in ("a", "b")]

            def found():
                driver.find_element("id", "rfind").click()
                wait_until(lambda: not js("return document.getElementById('rfind').disabled"), what="discovery answered")
                got = js("return window.tributaryView.recorder.publishers.map(p => p.address)")
                return set(addresses) <= set(got)
            wait_until(found, what="both publishers listed on the page")
            for address in addresses:
                driver.find_element("css selector", f'input.rstream[data-address="{address}"][data-source="1"]').click()
            # The page sends the ticked streams in its list's order (discovery's: by name, then address).
            listed = [a for a in js("return window.tributaryView.recorder.publishers.map(p => p.address)") if a in addresses]
            driver.find_element("id", "rname").send_keys("lab")
            driver.find_element("id", "rstart").click()
            status = wait_until(lambda: (s := js("return window.tributaryView.recorder.status")) and s, what="recording")
            self.assertEqual(status["file"], "lab.tcap")
            started = time.monotonic()
            # While it records: a row per stream with its rate, clock offset and loss.
            rows = wait_until(lambda: (s := js("return window.tributaryView.recorder.status")) and len(s["streams"]) == 2
                              and all(t["rate"] is not None and t["clock_offset"] is not None and t["frames"] > 0
                                      for t in s["streams"]) and s["streams"], what="rates and offsets of both streams")
            by_address = {r["address"]: r for r in rows}
            self.assertAlmostEqual(by_address[addresses[0]]["rate"], 1000, delta=300)
            self.assertAlmostEqual(by_address[addresses[1]]["rate"], 500, delta=150)
            for r in rows:
                self.assertLess(abs(r["clock_offset"]), 0.1)  # one machine: one clock
                self.assertEqual(r["frames_missing"], 0)
            table = driver.find_element("id", "rstatus").text
            self.assertIn("amp-a", table)
            self.assertIn("force-b", table)
            time.sleep(max(0.0, 5 - (time.monotonic() - started)))
            driver.find_element("id", "rstop").click()
            last = wait_until(lambda: js("return window.tributaryView.recorder.last"), what="the recording stopped")
            self.assertEqual(last["state"], "stopped")
            self.assertGreaterEqual(last["duration"], 5)
            self.assertEqual(js("return window.tributaryView.recorder.errors"), [])
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [])
        finally:
            driver.quit()
        capture = os.path.join(self.directory, "lab.tcap")
        self.assertEqual(sorted(os.listdir(self.directory)), ["lab.tcap"])
        info = json.loads(tool("inspect", capture, "--json").stdout)
        self.assertTrue(info["footer"])
        self.assertEqual(info["gaps"], [])
        names = {s["name"]: s for s in info["sources"]}
        self.assertEqual(sorted(names), ["amp-a", "force-b"])
        self.assertGreater(names["amp-a"]["samples"], 4000)
        self.assertGreater(names["force-b"]["samples"], 2000)
        origins = {o["source_id"]: (o["address"], o["publisher_source_id"]) for o in info["source_origins"]}
        # The second publisher's source 1 renumbered 2, as `record FIRST SECOND` does.
        self.assertEqual(origins, {1: (listed[0], 1), 2: (listed[1], 1)})
        # The clock-offset records, per publisher: the first's name capture source 1, the second's 2.
        self.assertEqual({tuple(r["sources"]) for r in info["clock_offsets"]}, {(1,), (2,)})
        self.assertTrue(all(abs(r["offset_s"]) < 0.05 for r in info["clock_offsets"]))

    def test_2_refusals(self):
        port = self.view.port
        found = self.resolve_both(port)
        a = self.publishers["a"].address
        stream = [{"address": a, "source": 1}]
        for name, why in [("a..b", "'..'"), ("../x", "separator"), ("/tmp/x.tcap", "absolute"), ("sub/x", "separator"), ("a\u0000b", "NUL"),
                          ("n" * 120, "longer than"), ("", "empty")]:
            with self.subTest(name=name):
                status, body = request(port, "POST", "/recorder/start", {"name": name, "streams": stream})
                self.assertEqual(status, 400, body)
                self.assertIn(why, body["error"])
        open(os.path.join(self.directory, "taken.tcap"), "wb").close()
        status, body = request(port, "POST", "/recorder/start", {"name": "taken", "streams": stream})
        self.assertEqual((status, "exists already" in body["error"]), (409, True), body)
        status, body = request(port, "POST", "/recorder/start", {"name": "x", "streams": [{"address": a, "source": 9}]})
        self.assertEqual(status, 400, body)
        self.assertIn("no source 9", body["error"])
        self.assertEqual(len(found[a]["sources"]), 1)
        # One recording at a time: a second start while recording is refused, the first goes on.
        status, body = request(port, "POST", "/recorder/start", {"name": "first", "streams": stream})
        self.assertEqual(status, 201, body)
        status, body = request(port, "POST", "/recorder/start", {"name": "second", "streams": stream})
        self.assertEqual(status, 409, body)
        self.assertIn("under way (first.tcap)", body["error"])
        self.assertEqual(request(port, "POST", "/recorder/start", {"name": "x", "streams": stream},
                                 content_type="text/plain")[0], 415)
        self.assertEqual(request(port, "POST", "/recorder/start", b"{}", headers={"Origin": "http://attacker.test"})[0], 403)
        status, body = request(port, "POST", "/recorder/stop", {})
        self.assertEqual(status, 200, body)
        self.assertEqual(request(port, "POST", "/recorder/stop", {})[0], 409)
        self.assertFalse(os.path.exists(os.path.join(self.directory, "second.tcap")))
        self.assertTrue(json.loads(tool("inspect", os.path.join(self.directory, "first.tcap"), "--json").stdout)["footer"])
        for leftover in ("x.tcap", "x.tcap.partial", "second.tcap.partial"):
            self.assertFalse(os.path.exists(os.path.join(self.directory, leftover)), leftover)

    def test_3_without_record_dir_there_is_no_recorder(self):
        plain = view(self.publishers["a"].address)
        self.views.append(plain)
        status, body = request(plain.port, "GET", "/recorder")
        self.assertEqual(status, 404)
        self.assertIn("--record-dir", body["error"])
        status, body = request(plain.port, "POST", "/recorder/start", {"name": "x", "streams": []})
        self.assertEqual(status, 404)

    def test_4_a_token_view_needs_its_token_and_the_directory_must_exist(self):
        guarded = view(self.publishers["a"].address, "--record-dir", self.directory, "--require-token")
        self.views.append(guarded)
        token = guarded.url.split("?token=")[1]
        self.assertEqual(request(guarded.port, "GET", "/recorder")[0], 403)
        self.assertEqual(request(guarded.port, "POST", "/recorder/stop", {})[0], 403)
        status, body = request(guarded.port, "GET", f"/recorder?token={token}")
        self.assertEqual(status, 200, body)
        result = subprocess.run([self.view.process.args[0], "view", self.publishers["a"].address, "--api-key", "k",
                                 "--record-dir", os.path.join(self.directory, "missing")],
                                capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--record-dir", result.stderr)

    def test_5_closing_the_view_closes_the_capture(self):
        directory = os.path.join(self.directory, "closing")
        os.mkdir(directory)
        closing = view(self.publishers["a"].address, "--record-dir", directory)
        self.views.append(closing)
        found = self.resolve_both(closing.port)
        b = self.publishers["b"].address
        status, body = request(closing.port, "POST", "/recorder/start", {"name": "cut", "streams": [{"address": b, "source": 1}]})
        self.assertEqual(status, 201, body)
        self.assertEqual(body["streams"][0]["device"], found[b]["sources"][0]["device"])
        wait_until(lambda: request(closing.port, "GET", "/recorder")[1]["recording"]["streams"][0]["frames"] > 0,
                   what="frames recorded")
        closing.stop()
        self.assertEqual(os.listdir(directory), ["cut.tcap"])
        info = json.loads(tool("inspect", os.path.join(directory, "cut.tcap"), "--json").stdout)
        self.assertTrue(info["footer"])
        self.assertEqual([s["name"] for s in info["sources"]], ["force-b"])


if __name__ == "__main__":
    unittest.main()
