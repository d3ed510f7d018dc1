/// The page `/` serves: one self-contained HTML document (CSS and JavaScript inline, nothing fetched
/// from elsewhere), drawing the binary updates of docs/VIEW.md on canvases.
enum ViewPage {
    static let html = #"""
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Tributary live view</title>
        <style>
        :root { --bg:#f6f7f9; --panel:#fff; --ink:#1d2330; --muted:#667085; --line:#d0d5dd; --ok:#12805c; --bad:#c4320a; }
        * { box-sizing:border-box; }
        html, body { margin:0; padding:0; background:var(--bg); color:var(--ink); font:14px/1.4 system-ui, sans-serif; }
        header { display:flex; flex-wrap:wrap; align-items:center; gap:8px 16px; padding:8px 12px; background:#1d2330; color:#fff; }
        header h1 { font-size:16px; margin:0; font-weight:600; }
        #state { padding:2px 8px; border-radius:10px; font-size:12px; background:var(--ok); }
        #state.down { background:var(--bad); }
        #error { font-size:12px; color:#fecdca; overflow-wrap:anywhere; }
        main { display:grid; grid-template-columns: 260px minmax(0,1fr); gap:12px; padding:12px; }
        @media (max-width: 800px) { main { grid-template-columns: minmax(0,1fr); padding:8px; gap:8px; } }
        section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:8px 10px; min-width:0; }
        h2 { font-size:13px; margin:0 0 6px; color:var(--muted); text-transform:uppercase; letter-spacing:.04em; }
        .plots { display:grid; gap:12px; min-width:0; }
        canvas { width:100%; height:240px; display:block; touch-action:manipulation; }
        @media (max-width: 800px) { canvas { height:180px; } .plots { order:-1; } }
        .row { display:flex; flex-wrap:wrap; gap:6px 12px; align-items:center; margin:4px 0; }
        label { white-space:nowrap; }
        input[type=number] { width:80px; }
        button, select, input { font:inherit; min-height:32px; }
        .source { margin:6px 0; }
        .source b { display:block; overflow-wrap:anywhere; }
        .channel { display:flex; align-items:center; gap:6px; min-height:32px; white-space:normal; overflow-wrap:anywhere; }
        .swatch { width:12px; height:12px; border-radius:2px; flex:none; }
        .scroll { overflow-x:auto; }
        table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
        th, td { padding:3px 6px; text-align:right; border-bottom:1px solid var(--line); white-space:nowrap; }
        th { white-space:normal; vertical-align:bottom; }
        td:first-child { white-space:normal; overflow-wrap:anywhere; min-width:6em; }
        th:first-child, td:first-child { text-align:left; }
        dl { display:grid; grid-template-columns:auto 1fr; gap:2px 10px; margin:0; }
        dt { color:var(--muted); } dd { margin:0; text-align:right; font-variant-numeric:tabular-nums; }
        @media (max-width: 720px) {
          #readings, #readings tbody { display:block; }
          #readings thead { display:none; }
          #readings tr { display:grid; grid-template-columns:repeat(3, minmax(0,1fr)); gap:4px 8px; padding:6px 0; border-bottom:1px solid var(--line); }
          #readings td { display:block; border:0; padding:0; text-align:left; white-space:normal; overflow-wrap:anywhere; }
          #readings td:first-child { grid-column:1 / -1; font-weight:600; }
          #readings td:not(:first-child)::before { content:attr(data-label); display:block; font-size:11px; color:var(--muted); }
        }
        #peak, #filters { font-size:12px; color:var(--muted); overflow-wrap:anywhere; }
        #rmessage { font-size:12px; overflow-wrap:anywhere; } #rmessage.bad { color:var(--bad); }
        #rstate { font-size:12px; color:var(--muted); overflow-wrap:anywhere; }
        </style>
        </head>
        <body>
        <header><h1>Tributary live view</h1><span id="state" class="down">connecting</span><span id="error"></span></header>
        <main>
        <div>
        <section><h2>Channels</h2><div id="sources">waiting for the publisher's configuration…</div><div id="filters"></div></section>
        <section><h2>Display</h2>
        <div class="row"><label>Window <select id="window"></select></label><button id="pause" type="button">Pause</button></div>
        <div class="row"><label><input type="checkbox" id="autoscale" checked> Autoscale</label>
        <label>min <input type="number" id="ymin" value="-1" step="any"></label><label>max <input type="number" id="ymax" value="1" step="any"></label></div>
        <div class="row"><label><input type="checkbox" id="logf"> Log frequency</label></div>
        <div class="row"><label>Spectrogram of <select id="sgchannel" style="max-width:11em"></select></label></div>
        <div id="displayfilter"></div>
        </section>
        <section><h2>Link</h2><dl id="health"></dl></section>
        </div>
        <div class="plots">
        <section><h2>Traces</h2><canvas id="trace"></canvas></section>
        <section><h2>Spectrum (Welch, power per bin)</h2><canvas id="spectrum"></canvas><div id="peak"></div></section>
        <section><h2>Spectrogram (power per bin, newest on the right)</h2><canvas id="spectrogram"></canvas></section>
        <section><h2>Readings</h2><div class="scroll"><table id="readings"><thead><tr><th>Channel</th><th>RMS</th><th>p-p</th><th>Mean</th>
        <th>Tone (Hz)</th><th>Tone amp</th><th>THD (dB)</th><th>SINAD (dB)</th><th>ENOB (bits)</th></tr></thead><tbody></tbody></table></div></section>
        <section id="recorder" hidden><h2>Recorder</h2>
        <div class="row"><input id="rquery" placeholder="query, e.g. source=EEG" style="width:14em"><button id="rfind" type="button">Find publishers</button></div>
        <div id="rpublishers"></div>
        <div class="row"><label>File <input id="rname" placeholder="lab.tcap" style="width:14em" maxlength="100"></label>
        <button id="rstart" type="button">Start</button><button id="rstop" type="button" disabled>Stop</button></div>
        <div id="rmessage"></div><div id="rstate"></div>
        <div class="scroll"><table id="rstatus"><thead><tr><th>Stream</th><th>Rate (S/s)</th><th>Clock offset</th><th>Loss (frames)</th>
        <th>Bytes written</th><th>Duration</th></tr></thead><tbody></tbody></table></div></section>
        </div>
        </main>
        <script>
        "use strict";
        const colors = ["#1f77b4","#d62728","#2ca02c","#9467bd","#ff7f0e","#17becf","#8c564b","#e377c2"];
        const view = { updates:0, latencies:[], channels:[], health:null, clock:null, config:null, errors:[], paused:false, peak:null, axes:{}, spectrogram:null };
        // The spectrogram's history: one column per update that brought one, for one channel (docs/VIEW.md §1).
        const sg = { key: null, pointWidth: 0, points: 0, columns: [], times: [] };
        const sgMaxColumns = 600;
        window.tributaryView = view;
        let socket = null, config = null, last = null, pending = null;
        const $ = id => document.getElementById(id);

        function fmt(x, digits) {
          if (x === null || x === undefined || !isFinite(x)) return "–";
          const a = Math.abs(x);
          if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential(digits - 1);
          return x.toPrecision(digits);
        }
        function channelInfo(s, c) {
          const src = config && config.sources.find(x => x.id === s);
          const ch = src && src.channels.find(x => x.index === c);
          return { source: src, channel: ch, name: (src ? src.name : "source " + s) + " / " + (ch ? ch.name : "ch " + c), unit: ch ? ch.unit : "" };
        }

        function connect() {
          const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws" + location.search;
          socket = new WebSocket(url);
          socket.binaryType = "arraybuffer";
          socket.onopen = () => { $("state").textContent = "viewer connected"; };
          socket.onclose = () => { $("state").textContent = "viewer disconnected"; $("state").className = "down"; setTimeout(connect, 1000); };
          socket.onmessage = ev => {
            if (typeof ev.data === "string") return text(JSON.parse(ev.data));
            const u = decode(ev.data);
            socket.send('{"type":"ack"}');  // the server sends the next update once this one is taken
            if (!u) return;
            view.updates++;
            view.health = u.health;
            view.clock = u.clock;
            recordColumn(u);
            if (view.paused) return health(u);
            const scheduled = pending !== null;
            pending = u;
            if (!scheduled) requestAnimationFrame(() => { const p = pending; pending = null; last = p; draw(p); });
          };
        }
        setInterval(() => { if (socket && socket.readyState === 1) socket.send('{"type":"ping"}'); }, 10000);

        function text(m) {
          if (m.type === "config") { config = m; view.config = m; buildControls(); if (m.recorder && !rec.enabled) pollRecorder(); }
          else if (m.type === "status") { $("error").textContent = m.error ? (/^error \d+/.test(m.error) ? "last error: " : "") + m.error : ""; if (m.error) view.errors.push(m.error); }
          else if (m.type === "error") { $("error").textContent = m.message; view.errors.push(m.message); }
        }

        function buildControls() {
          const box = $("sources");
          box.textContent = "";
          const selected = new Set(config.selection.map(p => p[0] + ":" + p[1]));
          let colorIndex = 0;
          const colorOf = {};
          config.selection.forEach(p => { colorOf[p[0] + ":" + p[1]] = colors[colorIndex++ % colors.length]; });
          const filters = [];
          for (const s of config.sources) {
            const div = document.createElement("div"); div.className = "source";
            const title = document.createElement("b"); title.textContent = s.id + " · " + s.name; div.appendChild(title);
            for (const c of s.channels) {
              const key = s.id + ":" + c.index;
              const label = document.createElement("label"); label.className = "channel";
              const box2 = document.createElement("input"); box2.type = "checkbox"; box2.checked = selected.has(key);
              box2.dataset.source = s.id; box2.dataset.channel = c.index; box2.addEventListener("change", sendSelection);
              const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = colorOf[key] || "transparent";
              const t = document.createElement("span"); t.textContent = c.name + " (" + c.unit + ", " + (c.rate < 1e6 ? String(+c.rate.toPrecision(7)) : fmt(c.rate, 4)) + " S/s)";
              label.append(box2, sw, t); div.appendChild(label);
            }
            box.appendChild(div);
            if (s.filter) filters.push("source " + s.id + ": filter " + s.filter.id + " '" + s.filter.query + "'");
          }
          $("filters").textContent = filters.length ? "Server-side filters: " + filters.join("; ") : "No server-side filter";
          $("displayfilter").textContent = config.displayFilter ? "Display filter: " + config.displayFilter : "";
          const sc = $("sgchannel"), previous = sc.value;
          sc.textContent = "";
          for (const p of config.selection) {
            const o = document.createElement("option"); o.value = p[0] + ":" + p[1]; o.textContent = channelInfo(p[0], p[1]).name;
            if (o.value === previous) o.selected = true;
            sc.appendChild(o);
          }
          const w = $("window");
          w.textContent = "";
          for (const v of config.windows) {
            const o = document.createElement("option"); o.value = v; o.textContent = v < 1 ? (v * 1000) + " ms" : v + " s";
            if (v === config.window) o.selected = true;
            w.appendChild(o);
          }
        }
        function sendSelection() {
          const pairs = [];
          document.querySelectorAll("#sources input[type=checkbox]").forEach(b => { if (b.checked) pairs.push([+b.dataset.source, +b.dataset.channel]); });
          if (pairs.length > config.maxChannels) { $("error").textContent = "at most " + config.maxChannels + " channels"; return; }
          socket.send(JSON.stringify({ type: "select", channels: pairs }));
        }
        $("window").addEventListener("change", ev => socket.send(JSON.stringify({ type: "window", seconds: +ev.target.value })));
        $("pause").addEventListener("click", () => { view.paused = !view.paused; $("pause").textContent = view.paused ? "Resume" : "Pause"; if (!view.paused && last) draw(last); });
        for (const id of ["autoscale", "ymin", "ymax", "logf"]) $(id).addEventListener("change", () => { if (last) draw(last); });
        $("sgchannel").addEventListener("change", () => { sg.key = null; if (last) draw(last); });
        window.addEventListener("resize", () => { if (last) draw(last); });

        // The binary update of docs/VIEW.md.
        function decode(buffer) {
          const d = new DataView(buffer);
          if (buffer.byteLength < 120 || d.getUint32(0, true) !== 0x31555654) return null;
          const f = o => d.getFloat64(o, true);
          const u = { sequence: d.getUint32(4, true), serverTime: f(8), dataTime: f(16), channels: [] };
          u.health = { framesPerSecond: f(24), megabytesPerSecond: f(32), framesReceived: f(40), gapNotices: f(48), framesLost: f(56),
            unaccountedLoss: f(64), reconnections: f(72), latencyP50: f(80), latencyP99: f(88), updatesDropped: f(96), connected: f(104) === 1, ended: f(104) === 2 };
          const n = d.getUint32(112, true), hasColumns = (d.getUint32(116, true) & 1) !== 0;
          let o = 120;
          for (let i = 0; i < n; i++) {
            const c = { source: d.getUint32(o, true), channel: d.getUint32(o + 4, true), rate: f(o + 8), window: f(o + 16), lo: f(o + 24), hi: f(o + 32) };
            const columns = d.getUint32(o + 40, true), points = d.getUint32(o + 44, true);
            c.pointWidth = f(o + 48); c.peakFrequency = f(o + 56); c.peakDB = f(o + 64); c.segments = f(o + 72);
            const r = []; for (let k = 0; k < 8; k++) r.push(f(o + 80 + 8 * k));
            c.readings = { rms: r[0], peakToPeak: r[1], mean: r[2], toneFrequency: r[3], toneAmplitude: r[4], thdDB: r[5], sinadDB: r[6], enob: r[7] };
            o += 144;
            c.min = new Float64Array(columns); c.max = new Float64Array(columns);
            const span = (c.hi - c.lo) / 65535;
            for (let k = 0; k < columns; k++) {
              c.min[k] = c.lo + (d.getInt16(o, true) + 32768) * span; c.max[k] = c.lo + (d.getInt16(o + 2, true) + 32768) * span; o += 4;
            }
            c.db = new Float64Array(points);
            for (let k = 0; k < points; k++) { c.db[k] = d.getInt16(o, true) / 100; o += 2; }
            c.column = null;
            if (hasColumns) {
              const col = new Float64Array(points);
              let any = false;
              for (let k = 0; k < points; k++) { const q = d.getInt16(o, true); col[k] = q === -32768 ? NaN : q / 100; any = any || q !== -32768; o += 2; }
              if (any) c.column = col;
            }
            o = Math.ceil(o / 8) * 8;
            u.channels.push(c);
          }
          // Flags bit 1: the publisher's clock (offset = its clock minus the view's, s; round trip, s).
          u.clock = (d.getUint32(116, true) & 2) !== 0 && o + 32 <= buffer.byteLength
            ? { offset: f(o), rtt: f(o + 8), measuredAt: f(o + 16), estimates: f(o + 24) } : null;
          return u;
        }

        function setup(canvas) {
          const r = canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
          const w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
          if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
          const g = canvas.getContext("2d");
          g.setTransform(dpr, 0, 0, dpr, 0, 0);
          g.clearRect(0, 0, r.width, r.height);
          g.font = "11px system-ui, sans-serif";
          return { g, w: r.width, h: r.height, dpr: w / Math.max(1e-9, r.width) };
        }
        function colorFor(c) {
          const i = config ? config.selection.findIndex(p => p[0] === c.source && p[1] === c.channel) : -1;
          return colors[(i < 0 ? 0 : i) % colors.length];
        }

        // Axis ticks at round values: steps of 1, 2 or 5 × 10^k, about `count` of them over [lo, hi].
        function niceTicks(lo, hi, count) {
          const span = hi - lo;
          if (!(span > 0) || !isFinite(span)) return { step: 1, values: [] };
          const raw = span / Math.max(1, count), p = Number("1e" + Math.floor(Math.log10(raw)));
          const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw * 0.999);
          const values = [];
          for (let i = Math.ceil(lo / step - 1e-9); i <= Math.floor(hi / step + 1e-9); i++) values.push(i * step);
          return { step, values };
        }
        // A tick label with the decimals its step needs, never in scientific notation.
        function tickLabel(v, step) {
          const s = v.toFixed(Math.max(0, Math.min(15, -Math.floor(Math.log10(step) + 1e-9))));
          return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s.replace("-", "\u2212");
        }
        // Log-axis ticks: 1, 2, 5 × 10^k in [lo, hi], thinned to decades (then every other decade…) to fit `count`.
        function logTicks(lo, hi, count) {
          for (const mults of [[1, 2, 5], [1]]) {
            const values = [];
            for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
              for (const m of mults) { const v = m * Number("1e" + e); if (v >= lo * 0.999 && v <= hi * 1.001) values.push(v); }
            if (values.length <= count) return values;
          }
          const values = [], every = Math.ceil(Math.log10(hi / lo) / Math.max(1, count));
          for (let e = Math.ceil(Math.log10(lo)); e <= Math.floor(Math.log10(hi)); e += every) values.push(Number("1e" + e));
          return values;
        }
        function plainLabel(v) { return tickLabel(v, Math.pow(10, Math.floor(Math.log10(v) + 1e-9))); }
        // The axis of a physical quantity: an SI prefix for its unit where the values are small or large.
        function scaleFor(largest, unit) {
          if (!unit || !(largest > 0) || !isFinite(largest)) return { factor: 1, unit: unit || "" };
          for (const [f, p] of [[1e-6, "M"], [1e-3, "k"], [1, ""], [1e3, "m"], [1e6, "\u00b5"], [1e9, "n"]])
            if (largest * f >= 1 || f === 1e9) return { factor: f, unit: p + unit };
        }
        // Draws a plot's frame, grid, tick labels and units (`a`: the plot rectangle); keeps the labels drawn in view.axes[name].
        function frame(name, g, w, h, a, yTicks, yUnit, xTicks, xUnit) {
          const drawn = { y: yTicks.map(t => t.label), yUnit, x: [], xUnit };
          view.axes[name] = drawn;
          g.strokeStyle = "#eceef2"; g.lineWidth = 1; g.beginPath();
          for (const t of yTicks) { const y = Math.round(t.y) + 0.5; g.moveTo(a.left, y); g.lineTo(a.left + a.width, y); }
          for (const t of xTicks) { const x = Math.round(t.x) + 0.5; g.moveTo(x, a.top); g.lineTo(x, a.top + a.height); }
          g.stroke();
          g.strokeStyle = "#d0d5dd"; g.strokeRect(a.left + 0.5, a.top + 0.5, a.width - 1, a.height - 1);
          g.fillStyle = "#667085"; g.textBaseline = "middle"; g.textAlign = "right";
          for (const t of yTicks) g.fillText(t.label, a.left - 4, Math.max(a.top + 4, Math.min(a.top + a.height - 4, t.y)));
          g.textAlign = "left"; g.textBaseline = "alphabetic";
          g.fillText(yUnit, 2, a.top - 4);
          const below = a.top + a.height + 13;  // the tick labels' baseline; the axis title's is 14 px lower
          g.fillText(xUnit, w - g.measureText(xUnit).width - 4, below + 14);
          g.textAlign = "center";
          let right = -Infinity;
          for (const t of xTicks) {
            const half = g.measureText(t.label).width / 2, x = Math.max(half + 2, Math.min(w - half - 2, t.x));
            if (x - half < right + 6) continue;
            g.fillText(t.label, x, below); right = x + half; drawn.x.push(t.label);
          }
          g.textAlign = "left";
        }
        // Samples per trace column, as ChannelMonitor cuts the window (docs/VIEW.md §1).
        function samplesPerColumn(rate, window) { return Math.max(1, Math.ceil(Math.max(2, Math.round(rate * window)) / 600)); }

        function drawTrace(u) {
          const { g, w, h, dpr } = setup($("trace"));
          let lo = Infinity, hi = -Infinity;
          if ($("autoscale").checked) { for (const c of u.channels) if (c.min.length) { lo = Math.min(lo, c.lo); hi = Math.max(hi, c.hi); } }
          else { lo = +$("ymin").value; hi = +$("ymax").value; }
          if (!isFinite(lo) || !isFinite(hi)) { lo = -1; hi = 1; }
          if (hi <= lo) { const m = (hi + lo) / 2; lo = m - 1e-9 - Math.abs(m) * 1e-6; hi = m + 1e-9 + Math.abs(m) * 1e-6; }
          const pad = (hi - lo) * 0.05; lo -= pad; hi += pad;
          const units = [...new Set(u.channels.map(c => channelInfo(c.source, c.channel).unit).filter(x => x))];
          const ys = scaleFor(Math.max(Math.abs(lo), Math.abs(hi)), units.length === 1 ? units[0] : "");
          const top = 16, height = h - top - 34;
          const yt = niceTicks(lo * ys.factor, hi * ys.factor, Math.max(2, Math.floor(height / 36)));
          const ylabels = yt.values.map(v => tickLabel(v, yt.step));
          const left = Math.ceil(Math.max(20, ...ylabels.map(t => g.measureText(t).width))) + 8;
          const a = { left, top, width: Math.max(1, w - left - 4), height: Math.max(1, height) };
          const y = v => a.top + a.height - (v - lo) / (hi - lo) * a.height;
          const win = u.channels.length ? u.channels[0].window : (config ? config.window : 0.1);
          const ts = win < 1 ? { factor: 1e3, unit: "ms" } : { factor: 1, unit: "s" };
          const xt = niceTicks(-win * ts.factor, 0, Math.max(2, Math.floor(a.width / 70)));
          const X = t => a.left + a.width * (t + win) / win;  // t: seconds before the newest sample
          frame("trace", g, w, h, a, yt.values.map((v, i) => ({ y: y(v / ys.factor), label: ylabels[i] })),
                units.length > 1 ? units.join(", ") : ys.unit, xt.values.map(v => ({ x: X(v / ts.factor), label: tickLabel(v, xt.step) })),
                "time, " + ts.unit);
          view.traceArea = a;
          g.save(); g.beginPath(); g.rect(a.left + 1, a.top + 1, a.width - 2, a.height - 2); g.clip();  // inside the frame
          for (const c of u.channels) {
            const n = c.min.length; if (!n) continue;
            const dt = samplesPerColumn(c.rate, c.window) / c.rate;
            const color = colorFor(c);
            g.fillStyle = color; g.strokeStyle = color;
            if (a.width * dpr * dt / win < 1) {
              // Denser than device pixels: per pixel column the band from the lowest minimum to the highest
              // maximum of its columns, stretched to meet the neighbour's band (the signal passes in between).
              const P = Math.ceil(a.width * dpr), tops = new Float64Array(P).fill(-Infinity), bots = new Float64Array(P).fill(Infinity);
              for (let k = 0; k < n; k++) {
                const t1 = -(n - 1 - k) * dt, p0 = Math.floor((X(t1 - dt) - a.left) * dpr), p1 = Math.ceil((X(t1) - a.left) * dpr) - 1;
                for (let p = Math.max(0, p0); p <= Math.min(P - 1, Math.max(p0, p1)); p++) {
                  if (c.max[k] > tops[p]) tops[p] = c.max[k];
                  if (c.min[k] < bots[p]) bots[p] = c.min[k];
                }
              }
              g.setTransform(1, 0, 0, 1, 0, 0);
              const x0 = Math.round(a.left * dpr), thin = 1.5 * dpr;
              let prevTop = NaN, prevBot = NaN;
              for (let p = 0; p < P; p++) {
                if (!isFinite(tops[p])) { prevTop = prevBot = NaN; continue; }
                let upper = tops[p], lower = bots[p];
                if (!isNaN(prevTop)) { upper = Math.max(upper, prevBot); lower = Math.min(lower, prevTop); }
                prevTop = tops[p]; prevBot = bots[p];
                const ya = y(upper) * dpr, yb = y(lower) * dpr, mid = (ya + yb) / 2;
                const y0 = Math.min(ya, mid - thin / 2), y1 = Math.max(yb, mid + thin / 2);
                g.fillRect(x0 + p, y0, 1, y1 - y0);
              }
              g.setTransform(dpr, 0, 0, dpr, 0, 0);
            } else {
              // Sparser than pixels: a line through the columns (their maxima forth, their minima back, the
              // band between filled), from the oldest column's start to the newest one's end.
              const xs = k => X(-(n - 1 - k) * dt - dt / 2);
              g.beginPath();
              g.moveTo(X(-n * dt), y(c.max[0]));
              for (let k = 0; k < n; k++) g.lineTo(xs(k), y(c.max[k]));
              g.lineTo(X(0), y(c.max[n - 1])); g.lineTo(X(0), y(c.min[n - 1]));
              for (let k = n - 1; k >= 0; k--) g.lineTo(xs(k), y(c.min[k]));
              g.lineTo(X(-n * dt), y(c.min[0]));
              g.closePath();
              g.fill();
              g.lineWidth = 1.5; g.lineJoin = "round"; g.stroke();
            }
          }
          g.restore();
        }

        function drawSpectrum(u) {
          const { g, w, h } = setup($("spectrum")), log = $("logf").checked;
          let top = -Infinity, floor = Infinity, fmax = 0;
          for (const c of u.channels) for (let k = 1; k < c.db.length; k++) { top = Math.max(top, c.db[k]); floor = Math.min(floor, c.db[k]); fmax = Math.max(fmax, c.pointWidth * (c.db.length - 1)); }
          const units = [...new Set(u.channels.map(c => channelInfo(c.source, c.channel).unit).filter(x => x))];
          const dbUnit = units.length === 1 ? "dB re 1 " + units[0] + "\u00b2" : "dB";
          view.spectrumUnit = dbUnit;
          if (!isFinite(top) || fmax <= 0) {
            const a = { left: 40, top: 16, width: Math.max(1, w - 44), height: Math.max(1, h - 50) };
            frame("spectrum", g, w, h, a, [], dbUnit, [], "frequency, Hz");
            $("peak").textContent = "waiting for a Welch segment…"; return;
          }
          top = Math.ceil(top / 10) * 10 + 5; floor = Math.max(floor, top - 160); floor = Math.floor(floor / 10) * 10;
          const ptop = 16, height = Math.max(1, h - ptop - 34);
          const yt = niceTicks(floor, top, Math.max(2, Math.floor(height / 36)));
          const ylabels = yt.values.map(v => tickLabel(v, yt.step));
          const left = Math.ceil(Math.max(20, ...ylabels.map(t => g.measureText(t).width))) + 8;
          const a = { left, top: ptop, width: Math.max(1, w - left - 4), height };
          const fs = fmax >= 1e6 ? { factor: 1e-6, unit: "MHz" } : { factor: 1, unit: "Hz" };
          const fmin = log ? Math.max(u.channels[0].pointWidth, fmax / 1e5) : 0;
          const x = f => a.left + a.width * (log ? Math.log(Math.max(f, fmin) / fmin) / Math.log(fmax / fmin) : f / fmax);
          const y = v => a.top + a.height - (v - floor) / (top - floor) * a.height;
          const widest = g.measureText(String(Math.round(fmax * fs.factor))).width + 14;
          const count = Math.max(2, Math.floor(a.width / Math.max(50, widest)));
          let xticks;
          if (log) xticks = logTicks(fmin * fs.factor, fmax * fs.factor, count).map(v => ({ x: x(v / fs.factor), label: plainLabel(v) }));
          else { const t = niceTicks(0, fmax * fs.factor, count); xticks = t.values.map(v => ({ x: x(v / fs.factor), label: tickLabel(v, t.step) })); }
          frame("spectrum", g, w, h, a, yt.values.map((v, i) => ({ y: y(v), label: ylabels[i] })), dbUnit, xticks, "frequency, " + fs.unit);
          g.save(); g.beginPath(); g.rect(a.left + 1, a.top + 1, a.width - 2, a.height - 2); g.clip();  // inside the frame
          const peaks = [];
          for (const c of u.channels) {
            g.strokeStyle = colorFor(c); g.lineWidth = 1; g.beginPath();
            for (let k = log ? 1 : 0; k < c.db.length; k++) { const px = x(k * c.pointWidth), py = y(Math.max(floor, c.db[k])); if (k <= 1) g.moveTo(px, py); else g.lineTo(px, py); }
            g.stroke();
            if (isFinite(c.peakFrequency)) {
              g.fillStyle = colorFor(c); g.beginPath(); g.arc(x(c.peakFrequency), y(c.peakDB), 3, 0, 7); g.fill();
              peaks.push({ source: c.source, channel: c.channel, frequency: c.peakFrequency, db: c.peakDB });
            }
          }
          g.restore();
          view.peak = peaks;
          $("peak").textContent = peaks.map(p => {
            const unit = channelInfo(p.source, p.channel).unit;
            return "Peak " + channelInfo(p.source, p.channel).name + ": " + p.frequency.toFixed(2) + " Hz, " + p.db.toFixed(1) + (unit ? " dB re 1 " + unit + "\u00b2" : " dB");
          }).join(" · ");
        }

        // Keeps the column of the chosen channel; a new channel, rate or point grid starts a new history.
        function recordColumn(u) {
          const chosen = $("sgchannel").value;
          const c = u.channels.find(x => x.source + ":" + x.channel === chosen) || u.channels[0];
          if (!c) return;
          const key = c.source + ":" + c.channel;
          if (sg.key !== key || sg.pointWidth !== c.pointWidth || sg.points !== c.db.length) {
            sg.key = key; sg.pointWidth = c.pointWidth; sg.points = c.db.length; sg.columns = []; sg.times = [];
          }
          if (!c.column) return;
          sg.columns.push(c.column); sg.times.push(u.serverTime);
          if (sg.columns.length > sgMaxColumns) { sg.columns.shift(); sg.times.shift(); }
        }
        // A perceptually ordered map from 0 (low) to 1 (high): dark blue, purple, orange, yellow.
        function heat(t) {
          const stops = [[13, 8, 135], [126, 3, 168], [204, 71, 120], [248, 149, 64], [240, 249, 33]];
          const x = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
          return stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
        }
        function drawSpectrogram() {
          const { g, w, h, dpr } = setup($("spectrogram"));
          const n = sg.columns.length, info = sg.key ? channelInfo(+sg.key.split(":")[0], +sg.key.split(":")[1]) : null;
          const dbUnit = info && info.unit ? "dB re 1 " + info.unit + "²" : "dB";
          const bar = 64;  // the colour bar and its labels, right of the plot
          if (!n || sg.points < 2) {
            const a = { left: 52, top: 16, width: Math.max(1, w - 56 - bar), height: Math.max(1, h - 50) };
            frame("spectrogram", g, w, h, a, [], "frequency, Hz", [], "time, s");
            view.spectrogram = { columns: 0, channel: sg.key };
            return;
          }
          let top = -Infinity;
          for (const col of sg.columns) for (let k = 1; k < col.length; k++) if (col[k] > top) top = col[k];
          top = Math.ceil(top / 10) * 10; const floor = top - 80;
          const fmax = sg.pointWidth * (sg.points - 1), fs = fmax >= 1e6 ? { factor: 1e-6, unit: "MHz" } : fmax >= 1e3 ? { factor: 1e-3, unit: "kHz" } : { factor: 1, unit: "Hz" };
          const ptop = 16, height = Math.max(1, h - ptop - 34);
          const yt = niceTicks(0, fmax * fs.factor, Math.max(2, Math.floor(height / 36)));
          const ylabels = yt.values.map(v => tickLabel(v, yt.step));
          const left = Math.ceil(Math.max(20, ...ylabels.map(t => g.measureText(t).width))) + 8;
          const a = { left, top: ptop, width: Math.max(1, w - left - 4 - bar), height };
          const now = sg.times[n - 1], span = Math.max(1e-3, now - sg.times[0]) * n / Math.max(1, n - 1);
          const xt = niceTicks(-span, 0, Math.max(2, Math.floor(a.width / 70)));
          const X = t => a.left + a.width * (t + span) / span;
          const Y = f => a.top + a.height - f / fmax * a.height;
          frame("spectrogram", g, w, h, a, yt.values.map((v, i) => ({ y: Y(v / fs.factor), label: ylabels[i] })), "frequency, " + fs.unit,
                xt.values.map(v => ({ x: X(v), label: tickLabel(v, xt.step) })), "time, s");
          // The heat map, one device pixel per cell at most, drawn into an image of the plot's size.
          const W = Math.max(1, Math.round((a.width - 2) * dpr)), H = Math.max(1, Math.round((a.height - 2) * dpr));
          const image = g.createImageData(W, H);
          for (let px = 0; px < W; px++) {
            const t = -span + (px + 0.5) / W * span, k = Math.min(n - 1, Math.max(0, Math.floor((t + span) / span * n)));
            const col = sg.columns[k];
            for (let py = 0; py < H; py++) {
              const f = (1 - (py + 0.5) / H) * fmax, bin = Math.min(col.length - 1, Math.round(f / sg.pointWidth));
              const v = col[bin], o = (py * W + px) * 4;
              if (isNaN(v)) { image.data[o + 3] = 0; continue; }
              const [r, gg, b] = heat((v - floor) / (top - floor));
              image.data[o] = r; image.data[o + 1] = gg; image.data[o + 2] = b; image.data[o + 3] = 255;
            }
          }
          g.putImageData(image, Math.round((a.left + 1) * dpr), Math.round((a.top + 1) * dpr));
          // The colour bar: floor at the bottom, top at the top, labelled every 20 dB.
          const bx = a.left + a.width + 10;
          for (let py = 0; py < a.height; py++) { const [r, gg, b] = heat(1 - py / a.height); g.fillStyle = "rgb(" + r + "," + gg + "," + b + ")"; g.fillRect(bx, a.top + py, 12, 1); }
          g.fillStyle = "#667085"; g.textBaseline = "middle"; g.textAlign = "left";
          for (let v = floor; v <= top; v += 20) g.fillText(String(v), bx + 16, a.top + a.height - (v - floor) / (top - floor) * a.height);
          g.textBaseline = "alphabetic"; g.fillText(dbUnit, Math.max(0, w - g.measureText(dbUnit).width - 2), a.top - 4);
          const newest = sg.columns[n - 1];
          let peak = 1; for (let k = 2; k < newest.length; k++) if (newest[k] > newest[peak]) peak = k;
          view.spectrogram = { columns: n, channel: sg.key, floor, top, fmax, span, peakFrequency: peak * sg.pointWidth, pointWidth: sg.pointWidth };
        }

        function drawReadings(u) {
          const body = $("readings").tBodies[0];
          body.textContent = "";
          const labels = [...$("readings").tHead.rows[0].cells].map(th => th.textContent);
          for (const c of u.channels) {
            const r = c.readings, info = channelInfo(c.source, c.channel), tr = document.createElement("tr");
            const v = (x, digits) => { const t = fmt(x, digits); return t === "–" || !info.unit ? t : t + " " + info.unit; };
            const cells = [info.name, v(r.rms, 4), v(r.peakToPeak, 4), v(r.mean, 3), fmt(r.toneFrequency, 6), v(r.toneAmplitude, 4), fmt(r.thdDB, 4), fmt(r.sinadDB, 4), fmt(r.enob, 3)];
            cells.forEach((t, i) => { const td = document.createElement("td"); td.textContent = t; td.dataset.label = labels[i]; if (i === 0) td.style.color = colorFor(c); tr.appendChild(td); });
            body.appendChild(tr);
          }
        }

        function health(u) {
          const h = u.health, dl = $("health");
          const rows = [["Frames/s", fmt(h.framesPerSecond, 4)], ["MB/s", fmt(h.megabytesPerSecond, 3)], ["Frames received", String(h.framesReceived)],
            ["Gap notices", String(h.gapNotices)], ["Frames lost", String(h.framesLost)], ["Unaccounted loss", String(h.unaccountedLoss)],
            ["Reconnects", String(h.reconnections)], ["Callback latency p50/p99", fmt(h.latencyP50, 3) + " / " + fmt(h.latencyP99, 3) + " ms"],
            ["Updates dropped (this page)", String(h.updatesDropped)],
            ["Publisher clock offset", u.clock ? (u.clock.offset >= 0 ? "+" : "") + u.clock.offset.toFixed(6) + " s" : "–"],
            ["Clock round trip", u.clock ? (u.clock.rtt * 1e3).toFixed(3) + " ms" : "–"],
            ["Update latency", view.latencies.length ? fmt(view.latencies[view.latencies.length - 1], 3) + " ms" : "–"]];
          dl.textContent = "";
          for (const [k, v] of rows) { const dt = document.createElement("dt"), dd = document.createElement("dd"); dt.textContent = k; dd.textContent = v; dl.append(dt, dd); }
          const st = $("state");
          st.textContent = h.connected ? "publisher connected" : h.ended ? "publisher ended the session — waiting for it to return" : "publisher lost — reconnecting";
          st.className = h.connected ? "" : "down";
        }

        function draw(u) {
          view.channels = u.channels.map(c => ({ source: c.source, channel: c.channel, columns: c.min.length, points: c.db.length, lo: c.lo, hi: c.hi,
            peakFrequency: c.peakFrequency, readings: c.readings }));
          drawTrace(u); drawSpectrum(u); drawSpectrogram(); drawReadings(u);
          if (isFinite(u.dataTime)) { view.latencies.push((performance.timeOrigin + performance.now()) - u.dataTime * 1000); if (view.latencies.length > 1000) view.latencies.shift(); }
          health(u);
          view.drawn = (view.drawn || 0) + 1;
        }
        // The recorder (docs/VIEW.md §6): shown when the view has one (GET /recorder answers 200).
        const rec = { enabled:false, publishers:[], status:null, last:null, errors:[] };
        view.recorder = rec;
        function recorderFetch(method, path, body) {
          const options = { method, cache: "no-store", headers: {} };
          if (body !== undefined) { options.headers["Content-Type"] = "application/json"; options.body = JSON.stringify(body); }
          return fetch(path + location.search, options).then(r => r.json().catch(() => ({})).then(j => ({ status: r.status, body: j })));
        }
        function recorderMessage(t, bad) { const m = $("rmessage"); m.textContent = t; m.className = bad ? "bad" : ""; if (bad) rec.errors.push(t); }
        function findPublishers() {
          $("rfind").disabled = true;
          recorderMessage("asking the network…");
          recorderFetch("POST", "/recorder/resolve", { query: $("rquery").value || null, timeout: 1 }).then(r => {
            if (r.status !== 200) return recorderMessage(r.body.error || "discovery failed (" + r.status + ")", true);
            rec.publishers = r.body.publishers;
            recorderMessage(rec.publishers.length ? rec.publishers.length + " publisher(s) found: tick the streams to record" : "no publisher answered", false);
            buildPublishers();
          }).catch(e => recorderMessage(String(e), true)).finally(() => { $("rfind").disabled = false; });
        }
        function buildPublishers() {
          const box = $("rpublishers");
          box.textContent = "";
          for (const p of rec.publishers) {
            const div = document.createElement("div"); div.className = "source";
            const title = document.createElement("b"); title.textContent = p.name + " · " + p.address; div.appendChild(title);
            for (const s of p.sources) {
              const label = document.createElement("label"); label.className = "channel";
              const box2 = document.createElement("input"); box2.type = "checkbox"; box2.className = "rstream";
              box2.dataset.address = p.address; box2.dataset.source = s.id;
              const t = document.createElement("span");
              t.textContent = s.id + " · " + s.device + (s.type ? " " + s.type : "") + " (" + s.channels + " ch, " + String(+s.rate.toPrecision(7)) + " S/s)";
              label.append(box2, t); div.appendChild(label);
            }
            box.appendChild(div);
          }
        }
        function startRecording() {
          const streams = Array.from(document.querySelectorAll("input.rstream:checked")).map(b => ({ address: b.dataset.address, source: Number(b.dataset.source) }));
          if (!streams.length) return recorderMessage("tick at least one stream", true);
          $("rstart").disabled = true;
          recorderFetch("POST", "/recorder/start", { name: $("rname").value, streams }).then(r => {
            if (r.status !== 201) { $("rstart").disabled = false; return recorderMessage(r.body.error || "refused (" + r.status + ")", true); }
            recorderMessage("recording " + r.body.file, false);
            showRecording(r.body);
          }).catch(e => { $("rstart").disabled = false; recorderMessage(String(e), true); });
        }
        function stopRecording() {
          $("rstop").disabled = true;
          recorderFetch("POST", "/recorder/stop", {}).then(r => {
            if (r.status !== 200) return recorderMessage(r.body.error || "refused (" + r.status + ")", true);
            rec.last = r.body;
            recorderMessage("recorded " + r.body.file + ": " + fmt(r.body.duration, 4) + " s, " + r.body.file_bytes + " bytes on disk", false);
            showRecording(null);
          }).catch(e => recorderMessage(String(e), true));
        }
        function showRecording(s) {
          rec.status = s;
          $("rstart").disabled = !!s; $("rstop").disabled = !s;
          const body = $("rstatus").tBodies[0];
          const shown = s || rec.last;
          body.textContent = "";
          $("rstate").textContent = shown ? (s ? "Recording " : "Last recording ") + shown.file + ": " + shown.publishers.map(p => p.address + " " + p.session).join("; ") : "";
          if (!shown) return;
          for (const st of shown.streams) {
            const loss = st.frames_missing + (st.gaps ? " (" + st.gaps + " gaps)" : "");
            const cells = [st.source + " · " + st.device + " @ " + st.address, st.rate === null ? "–" : fmt(st.rate, 5),
              st.clock_offset === null ? "–" : (st.clock_offset >= 0 ? "+" : "") + st.clock_offset.toFixed(6) + " s", loss, String(st.bytes), fmt(shown.duration, 4) + " s"];
            const tr = document.createElement("tr");
            cells.forEach(t => { const td = document.createElement("td"); td.textContent = t; tr.appendChild(td); });
            body.appendChild(tr);
          }
        }
        function pollRecorder() {
          recorderFetch("GET", "/recorder").then(r => {
            if (r.status !== 200) return;
            if (!rec.enabled) { rec.enabled = true; $("recorder").hidden = false; }
            rec.last = r.body.last;
            showRecording(r.body.recording);
          }).catch(() => {}).finally(() => { setTimeout(pollRecorder, 1000); });
        }
        $("rfind").addEventListener("click", findPublishers);
        $("rstart").addEventListener("click", startRecording);
        $("rstop").addEventListener("click", stopRecording);
        connect();
        </script>
        </body>
        </html>
        """#
}
