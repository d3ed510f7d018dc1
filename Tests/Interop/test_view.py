"""`tributary view`, `serve --http` and `monitor` as real processes on 127.0.0.1, the page in Debian's
headless chromium (selenium + chromium-driver).

The browser test loads the page from `view` against `serve --simulate`, checks that traces and the
spectrum are drawn, that the peak readout is the simulated frequency, that the readings agree with
`analyze` of a recording of the same stream, that choosing a channel changes the server-side filter,
that stopping and restarting the publisher shows the loss and the reconnection, that a phone-sized
viewport has no horizontal overflow, and that the console has no errors. Screenshots go to
$TRIBUTARY_VIEW_SCREENSHOTS (default: a temporary directory, removed afterwards). The security tests speak raw HTTP and
WebSocket handshakes.
"""
import base64
import http.client
import json
import math
import os
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import time
import unittest

from browser import chromium, wait_until
from tool_process import TIMEOUT, TRIBUTARY, Serve, ToolProcess

RATE, FREQ = 20000, 1000
DEVICE = f"id=1,name=Sim,rate={RATE},channels=3,freq={FREQ},amp=1,noise=0.01,block=1000"
BIN_WIDTH = RATE / 8192  # the view's Welch segment at 20 kS/s


def serve(port=0, *extra):
    return Serve("--simulate", DEVICE, *extra, bind=f"tcp://127.0.0.1:{port}", api_key="secret-key")


def view(publisher_port, *extra):
    p = ToolProcess("view", f"127.0.0.1:{publisher_port}", "--api-key", "secret-key", "--http", "127.0.0.1:0", *extra)
    p.url = p.value_after("view: ")
    return p


def websocket_handshake(host, port, path, origin=None):
    """Sends a WebSocket handshake; returns (status line, socket)."""
    s = socket.create_connection((host, port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if origin:
        request += f"Origin: {origin}\r\n"
    s.sendall((request + "\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = s.recv(4096)
        if not chunk:
            break
        response += chunk
    head, _, rest = response.partition(b"\r\n\r\n")
    _leftover[s.fileno()] = rest  # frames that came with the response
    return head.split(b"\r\n", 1)[0].decode(errors="replace"), s


_leftover = {}


def websocket_text(s, text):
    """Sends one masked text frame."""
    payload = text.encode()
    mask = os.urandom(4)
    header = bytes([0x81])
    n = len(payload)
    header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536 else bytes([0x80 | 127]) + n.to_bytes(8, "big")
    s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def next_frame(data):
    """The first whole (unmasked) server frame of `data` as (opcode, payload, the bytes after it), or
    None while it is incomplete."""
    if len(data) < 2:
        return None
    opcode, n, at = data[0] & 0xF, data[1] & 0x7F, 2
    if n == 126:
        n, at = int.from_bytes(data[2:4], "big"), 4
    elif n == 127:
        n, at = int.from_bytes(data[2:10], "big"), 10
    if len(data) < at + n:
        return None
    return opcode, data[at:at + n], data[at + n:]


def websocket_messages(s, timeout=5):
    """Reads frames until the timeout or the close; returns [(opcode, payload)]."""
    s.settimeout(timeout)
    data, out = _leftover.pop(s.fileno(), b""), []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            while (frame := next_frame(data)) is not None:
                opcode, payload, data = frame
                out.append((opcode, payload))
                if opcode == 8:
                    return out
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    _leftover[s.fileno()] = data
    return out


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.putrequest("GET", path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


class ViewSecurityTests(unittest.TestCase):
    """The HTTP side: token, fixed routes, origin check, message size, client limit, no API key."""

    @classmethod
    def setUpClass(cls):
        cls.server = serve()
        cls.view = view(cls.server.port, "--require-token")
        cls.port = int(cls.view.url.split(":")[2].split("/")[0])
        cls.token = cls.view.url.split("token=", 1)[1]

    @classmethod
    def tearDownClass(cls):
        cls.view.stop()
        cls.server.stop()

    def test_token_required(self):
        self.assertRegex(self.token, "^[0-9a-f]{32}$")
        self.assertEqual(http_get(self.port, "/")[0], 403)
        self.assertEqual(http_get(self.port, "/?token=" + "0" * 32)[0], 403)
        status, body = http_get(self.port, "/?token=" + self.token)
        self.assertEqual(status, 200)
        self.assertIn(b"<canvas", body)
        self.assertNotIn(b"secret-key", body)
        # A refused handshake gets an error status or a closed connection, never 101.
        self.assertNotIn("101", websocket_handshake("127.0.0.1", self.port, "/ws")[0])
        self.assertNotIn("101", websocket_handshake("127.0.0.1", self.port, "/ws?token=bad")[0])

    def test_fixed_routes_only(self):
        for path in ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/index.html", "//etc/passwd", "/ws/../../etc/passwd"]:
            status, body = http_get(self.port, path + "?token=" + self.token)
            self.assertIn(status, (400, 403, 404), path)
            self.assertNotIn(b"root:", body, path)

    def test_websocket_origin_size_and_no_api_key(self):
        status, s = websocket_handshake("127.0.0.1", self.port, "/ws?token=" + self.token, origin="http://evil.example")
        self.assertNotIn("101", status)
        s.close()
        status, s = websocket_handshake("127.0.0.1", self.port, "/ws?token=" + self.token, origin=f"http://127.0.0.1:{self.port}")
        self.assertIn("101", status)
        messages = websocket_messages(s, timeout=2)
        texts = [m for op, m in messages if op == 1]
        self.assertTrue(any(json.loads(t)["type"] == "config" for t in texts), texts)
        self.assertTrue(any(op == 2 and m[:4] == b"TVU1" for op, m in messages))
        self.assertFalse(any(b"secret-key" in m for _, m in messages))
        websocket_text(s, '{"type":"select","channels":[[9,9]]}')
        replies = [json.loads(m) for op, m in websocket_messages(s, timeout=1) if op == 1]
        self.assertTrue(any(r["type"] == "error" and "[9, 9]" in r["message"] for r in replies), replies)
        websocket_text(s, "x" * 5000)  # over the 4096-byte limit: the connection closes
        closed = websocket_messages(s, timeout=3)
        self.assertTrue(not closed or closed[-1][0] == 8 or all(op != 1 for op, _ in closed))
        s.close()

    def test_slow_browser_loses_updates_not_data(self):
        """A client that acknowledges nothing gets 2 updates, then none; its next one counts the dropped."""
        status, s = websocket_handshake("127.0.0.1", self.port, "/ws?token=" + self.token)
        self.assertIn("101", status)
        updates = [m for op, m in websocket_messages(s, timeout=2) if op == 2]
        self.assertEqual(len(updates), 2)
        websocket_text(s, '{"type":"ack"}')
        [later] = [m for op, m in websocket_messages(s, timeout=1) if op == 2]
        dropped, = struct.unpack_from("<d", later, 96)
        self.assertGreaterEqual(dropped, 5)  # ~10 updates a second were built meanwhile
        frames_before, = struct.unpack_from("<d", updates[0], 40)
        frames_after, = struct.unpack_from("<d", later, 40)
        self.assertGreater(frames_after - frames_before, 30)  # the subscriber kept receiving (20 frames/s)
        lost, unaccounted = struct.unpack_from("<dd", later, 56)
        self.assertEqual((lost, unaccounted), (0, 0))
        s.close()

    def test_client_limit(self):
        sockets = []
        try:
            for _ in range(8):
                status, s = websocket_handshake("127.0.0.1", self.port, "/ws?token=" + self.token)
                sockets.append(s)
                self.assertIn("101", status)
            status, s = websocket_handshake("127.0.0.1", self.port, "/ws?token=" + self.token)
            sockets.append(s)
            self.assertFalse("101" in status, status)
        finally:
            for s in sockets:
                s.close()


class ServeHTTPTests(unittest.TestCase):
    def test_serve_http_serves_the_page_of_its_sources(self):
        p = ToolProcess("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "secret-key", "--simulate", DEVICE, "--http", "127.0.0.1:0")
        try:
            url = p.value_after("view: ")
            port = int(url.split(":")[2].split("/")[0])
            self.assertEqual(http_get(port, "/")[0], 200)
            status, s = websocket_handshake("127.0.0.1", port, "/ws")
            self.assertIn("101", status)
            texts = [json.loads(m) for op, m in websocket_messages(s, timeout=2) if op == 1]
            config = next(t for t in texts if t["type"] == "config")
            self.assertEqual([src["id"] for src in config["sources"]], [1])
            self.assertEqual(len(config["sources"][0]["channels"]), 3)
            s.close()
        finally:
            p.stop()


class MonitorTests(unittest.TestCase):
    def monitor_json(self, server, channels, measure):
        """The JSON lines of `monitor --channels CHANNELS --measure MEASURE` of `server` over 2.2 s."""
        out = subprocess.run([TRIBUTARY, "monitor", f"127.0.0.1:{server.port}", "--api-key", "secret-key", "--channels", channels,
                              "--every", "0.5", "--duration", "2.2", "--measure", measure],
                             capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stderr)
        return [json.loads(line) for line in out.stdout.splitlines()]

    def test_monitor_json_lines(self):
        server = serve()
        try:
            lines = self.monitor_json(server, "2", "rms,freq")
            self.assertGreaterEqual(len(lines), 3)
            [channel] = lines[-1]["channels"]
            self.assertEqual((channel["source"], channel["channel"]), (1, 2))
            self.assertEqual(set(channel) - {"source", "channel", "name", "unit", "samples"}, {"rms", "freq"})
            self.assertAlmostEqual(channel["freq"], 3 * FREQ, delta=0.5)
            self.assertAlmostEqual(channel["rms"], 0.5 ** 0.5, delta=0.01)
            bad = subprocess.run([TRIBUTARY, "monitor", "127.0.0.1:1", "--api-key", "k", "--measure", "rms,volume"],
                                 capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("'volume' is not one of", bad.stderr)
        finally:
            server.stop()


    def test_thd_is_a_ratio_with_db_and_percent_beside_it(self):
        """Issue 43 item 6: monitor's `thd` means what analyze's does (a ratio), with `thd_db` and
        `thd_percent` beside it and SINAD as `sinad_db`; the terminal table's columns carry units."""
        server = serve()
        try:
            [channel] = self.monitor_json(server, "0", "thd,sinad")[-1]["channels"]
            self.assertEqual(set(channel) - {"source", "channel", "name", "unit", "samples"},
                             {"thd", "thd_db", "thd_percent", "sinad_db"})
            thd = channel["thd"]
            self.assertGreater(thd, 0)
            self.assertLess(thd, 1)  # a ratio: the simulated tone is clean
            self.assertAlmostEqual(channel["thd_db"], 20 * math.log10(thd), places=9)
            self.assertAlmostEqual(channel["thd_percent"], 100 * thd, places=9)
            self.assertLess(channel["thd_db"], 0)
            # On a terminal: a table whose columns name their units.
            import pty
            leader, follower = pty.openpty()
            try:
                p = subprocess.Popen([TRIBUTARY, "monitor", f"127.0.0.1:{server.port}", "--api-key", "secret-key",
                                      "--channels", "0", "--every", "0.3", "--duration", "1.2"],
                                     stdout=follower, stderr=subprocess.PIPE)
                os.close(follower)
                follower = None
                screen = b""
                while True:
                    try:
                        chunk = os.read(leader, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    screen += chunk
                p.wait(timeout=TIMEOUT)
                with p.stderr:
                    self.assertEqual(p.returncode, 0, p.stderr.read())
            finally:
                os.close(leader)
                if follower is not None:
                    os.close(follower)
            last = screen.decode(errors="replace").split("\x1b[2J")[-1]
            header = next(line for line in last.splitlines() if line.startswith("source"))
            for column in ("RMS V", "p-p V", "mean V", "tone Hz", "tone amp V", "THD %", "THD dB", "SINAD dB", "ENOB bits"):
                self.assertIn(column, header)
        finally:
            server.stop()


class MonitorSpectrogramAndFilterTests(unittest.TestCase):
    def monitor(self, port, *extra):
        out = subprocess.run([TRIBUTARY, "monitor", f"127.0.0.1:{port}", "--api-key", "secret-key", "--channels", "0",
                              "--every", "0.5", "--duration", "2.6", "--measure", "rms", *extra],
                             capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stderr)
        return [json.loads(line) for line in out.stdout.splitlines()]

    def test_spectrogram_columns_and_display_filters(self):
        """Issue 42 item 3: `monitor --spectrogram` gives each interval's spectrum (its strongest point at
        the tone); `--filter`/`--notch` show the channel through the filter of `process`, so a low-pass
        far below the tone, or a notch on it, takes the RMS down; a filter that cannot be designed for
        the channel's rate is said in the error member; a bad spec is a usage error."""
        server = serve()
        try:
            lines = self.monitor(server.port, "--spectrogram")
            # Every 0.5 s completes about two Welch segments (8192 samples, step 4096 at 20 kS/s); the
            # last interval, cut short by --duration, may complete none (null).
            columns = [line["channels"][0]["spectrogram"] for line in lines]
            self.assertGreaterEqual(sum(c is not None for c in columns), 3, columns)
            channel = [line["channels"][0] for line in lines if line["channels"][0]["spectrogram"] is not None][-1]
            sg = channel["spectrogram"]
            self.assertAlmostEqual(max(range(len(sg["db"])), key=lambda k: sg["db"][k]) * sg["df"], FREQ, delta=sg["df"])
            self.assertAlmostEqual((len(sg["db"]) - 1) * sg["df"], RATE / 2, delta=sg["df"])
            self.assertAlmostEqual(channel["rms"], 0.5 ** 0.5, delta=0.01)
            [low] = self.monitor(server.port, "--filter", "butter:8:lowpass:50")[-1]["channels"]
            self.assertLess(low["rms"], 0.05)
            [notched] = self.monitor(server.port, "--notch", f"{FREQ}:2")[-1]["channels"]
            self.assertLess(notched["rms"], 0.1)
            last = self.monitor(server.port, "--filter", "butter:4:lowpass:15000")[-1]
            self.assertEqual(last["channels"], [])
            self.assertIn("display filter butter:4:lowpass:15000: source 1 channel 0 at 20000.0 Hz", last["health"]["error"])
            bad = subprocess.run([TRIBUTARY, "monitor", f"127.0.0.1:{server.port}", "--api-key", "secret-key", "--filter", "butter:4:up:5"],
                                 capture_output=True, text=True, timeout=TIMEOUT)
            self.assertEqual(bad.returncode, 2, bad.stderr)
            self.assertIn("--filter 'butter:4:up:5': the band 'up'", bad.stderr)
        finally:
            server.stop()


class BrowserTests(unittest.TestCase):
    """One page session walked through in order (test_1 … test_7)."""

    @classmethod
    def setUpClass(cls):
        # Screenshots stay where TRIBUTARY_VIEW_SCREENSHOTS says; otherwise in a directory removed at the end.
        cls.keep_shots = bool(os.environ.get("TRIBUTARY_VIEW_SCREENSHOTS"))
        cls.shots = os.environ.get("TRIBUTARY_VIEW_SCREENSHOTS") or tempfile.mkdtemp(prefix="tributary-view-")
        os.makedirs(cls.shots, exist_ok=True)
        cls.server = serve()
        cls.view = view(cls.server.port)
        cls.driver = chromium(logs=True)
        cls.driver.get(cls.view.url)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.view.stop()
        cls.server.stop()
        if not cls.keep_shots:
            shutil.rmtree(cls.shots, ignore_errors=True)

    def js(self, script):
        return self.driver.execute_script(script)

    def channels(self):
        return self.js("return window.tributaryView.channels")

    def test_1_traces_and_spectrum_update(self):
        wait_until(lambda: self.js("return window.tributaryView.drawn || 0") >= 5, what="5 drawn updates")
        channels = wait_until(lambda: (c := self.channels()) and all(x["columns"] > 100 and x["points"] > 100 for x in c) and c,
                              what="traces and spectra")
        self.assertEqual([(c["source"], c["channel"]) for c in channels], [(1, 0), (1, 1)])
        first = self.js("return window.tributaryView.drawn")
        wait_until(lambda: self.js("return window.tributaryView.drawn") >= first + 5, what="more updates")
        for canvas in ["trace", "spectrum"]:
            drawn = self.js(f"""const c = document.getElementById('{canvas}'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                               let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;""")
            self.assertGreater(drawn, 1000, canvas)
        self.driver.save_screenshot(os.path.join(self.shots, "view-desktop.png"))

    def test_1b_spectrogram_grows_and_shows_the_tone(self):
        """Issue 42 item 3: the page keeps one column per update that completed a Welch segment and
        draws them as a heat map; the newest column's strongest point is the simulated tone."""
        sg = wait_until(lambda: (s := self.js("return window.tributaryView.spectrogram")) and s["columns"] >= 4 and s,
                        what="4 spectrogram columns")
        self.assertEqual(sg["channel"], "1:0")
        self.assertAlmostEqual(sg["peakFrequency"], FREQ, delta=sg["pointWidth"])
        self.assertAlmostEqual(sg["fmax"], RATE / 2, delta=sg["pointWidth"])
        drawn = self.js("""const c = document.getElementById('spectrogram'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                           let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] === 255) n++; return n;""")
        self.assertGreater(drawn, 5000)
        self.assertEqual(self.js("return window.tributaryView.axes.spectrogram.xUnit"), "time, s")

    def test_1c_link_lists_the_publishers_clock(self):
        """docs/VIEW.md §1: the update's clock block shown under Link (same host: an offset of about 0)."""
        clock = wait_until(lambda: self.js("return window.tributaryView.clock"), what="an update with a clock block")
        self.assertLess(abs(clock["offset"]), 1e-3)
        self.assertTrue(0 < clock["rtt"] < 0.05, clock)
        self.assertGreaterEqual(clock["estimates"], 1)
        text = wait_until(lambda: (t := self.js("return document.getElementById('health').innerText")) and "ms" in t.split(
            "Clock round trip")[-1] and t, what="the clock rows")
        self.assertRegex(text, r"Publisher clock offset\s+[+-]0\.\d{6} s\s+Clock round trip\s+\d+\.\d{3} ms")

    def test_2_peak_readout_is_the_simulated_frequency(self):
        peaks = wait_until(lambda: (p := self.js("return window.tributaryView.peak")) and len(p) == 2 and p, what="peaks")
        self.assertAlmostEqual(peaks[0]["frequency"], FREQ, delta=BIN_WIDTH / 2)
        self.assertAlmostEqual(peaks[1]["frequency"], 2 * FREQ, delta=BIN_WIDTH / 2)
        self.assertIn(f"{peaks[0]['frequency']:.2f} Hz", self.driver.find_element("id", "peak").text)

    def test_3_readings_match_analyze_of_a_recording(self):
        wait_until(lambda: (c := self.channels()) and all(x["readings"]["sinadDB"] is not None and x["readings"]["rms"] is not None
                                                          for x in c), what="readings")
        directory = tempfile.mkdtemp(prefix="tributary-view-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        capture = os.path.join(directory, "rec.tcap")
        recorded = subprocess.run([TRIBUTARY, "record", f"127.0.0.1:{self.server.port}", "--api-key", "secret-key",
                                   "--channels", "0", "--out", capture, "--duration", "1.5"], capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(recorded.returncode, 0, recorded.stderr)
        analyzed = subprocess.run([TRIBUTARY, "analyze", capture, "--stats", "--measure", "tone,thd,sinad,enob", "--json"],
                                  capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(analyzed.returncode, 0, analyzed.stderr)
        doc = json.loads(analyzed.stdout.splitlines()[0])
        channel = doc["sources"][0]["channels"][0]
        page = self.channels()[0]["readings"]
        stats, tone, distortion = channel["stats"], channel["tone"], channel
        self.assertAlmostEqual(page["rms"], stats["rms"], delta=0.01 * stats["rms"])
        self.assertAlmostEqual(page["mean"], stats["mean"], delta=0.01)
        self.assertAlmostEqual(page["peakToPeak"], stats["peak_to_peak"], delta=0.05 * stats["peak_to_peak"])
        self.assertAlmostEqual(page["toneFrequency"], tone["frequency"], delta=0.2)
        self.assertAlmostEqual(page["toneAmplitude"], tone["amplitude"], delta=0.01)
        self.assertAlmostEqual(page["sinadDB"], distortion["sinad_db"], delta=2)
        self.assertAlmostEqual(page["enob"], distortion["enob"], delta=0.35)
        # The table is rebuilt on every update: read the model and its drawn cell in one script, so they belong together.
        shown, model = self.js("""const cell = document.querySelector('#readings tbody tr td:nth-child(5)');
                                   return [cell ? cell.textContent : null, window.tributaryView.channels[0].readings.toneFrequency];""")
        self.assertEqual(shown[:4], f"{model:.6g}"[:4])

    def test_4_choosing_a_channel_changes_the_filter(self):
        self.assertIn("filter 1 '0,1;1'", self.driver.find_element("id", "filters").text)
        def box(channel):
            return self.driver.find_element("css selector", f"#sources input[data-channel='{channel}']")
        self.assertEqual(len(self.driver.find_elements("css selector", "#sources input[type=checkbox]")), 3)
        box(0).click()  # hide channel 0
        wait_until(lambda: "filter 1 '1;1'" in self.driver.find_element("id", "filters").text, what="filter 1 changed to 1")
        box(2).click()  # show channel 2
        wait_until(lambda: "filter 1 '1,2;1'" in self.driver.find_element("id", "filters").text, what="filter 1 changed to 1,2")
        channels = wait_until(lambda: (c := self.channels()) and [x["channel"] for x in c] == [1, 2]
                              and c[1]["readings"]["toneFrequency"] is not None and c, what="channels 1 and 2")
        self.assertAlmostEqual(channels[1]["readings"]["toneFrequency"], 3 * FREQ, delta=0.5)

    def test_5_publisher_stop_and_restart_show_loss_and_reconnection(self):
        port = self.server.port
        self.server.stop()
        # A publisher stopped by SIGTERM closes the session normally: said as such (issue 43 item 7), not as error 5
        # nor as a lost publisher.
        wait_until(lambda: "ended" in self.driver.find_element("id", "state").text, what="state 'publisher ended'")
        self.assertNotIn("lost", self.driver.find_element("id", "state").text)
        wait_until(lambda: self.driver.find_element("id", "error").text, what="the end in words")
        self.assertEqual(self.driver.find_element("id", "error").text, "the publisher closed the session: terminated (SIGTERM)")
        type(self).server = serve(port)
        wait_until(lambda: (h := self.js("return window.tributaryView.health")) and h["reconnections"] >= 1 and h["connected"],
                   what="reconnection")
        start = self.js("return window.tributaryView.drawn")
        wait_until(lambda: self.js("return window.tributaryView.drawn") >= start + 5, what="updates after the reconnection")
        self.assertIn("Reconnects", self.driver.find_element("id", "health").text)

    def test_6_phone_viewport_has_no_horizontal_overflow(self):
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        try:
            time.sleep(0.5)
            start = self.js("return window.tributaryView.drawn")
            wait_until(lambda: self.js("return window.tributaryView.drawn") >= start + 3, what="updates on the phone")
            widths = self.js("return [document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]")
            self.assertEqual(widths[2], 390)
            self.assertLessEqual(widths[0], widths[1], widths)
            self.driver.save_screenshot(os.path.join(self.shots, "view-phone.png"))
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def test_7_console_has_no_errors_and_latency(self):
        errors = [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [])
        latencies = self.js("return window.tributaryView.latencies")
        self.assertGreater(len(latencies), 20)
        p50 = statistics.median(latencies)
        print(f"\n  page update latency (publisher timestamp -> drawn): p50 {p50:.0f} ms, "
              f"p90 {sorted(latencies)[int(0.9 * len(latencies))]:.0f} ms over {len(latencies)} updates"
              + (f"; screenshots in {self.shots}" if self.keep_shots else ""))
        self.assertLess(p50, 1000)


if __name__ == "__main__":
    unittest.main()
