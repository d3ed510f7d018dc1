"""Issue 38: no number from a file stops a process.

A bounded, seeded mutation fuzz of the files `tributary` reads: XDF, TDMS, NPY, WAV, CSV, HDF5,
captures and frame files. Valid files are written by independent writers (a minimal XDF writer from
the specification, npTDMS, numpy, scipy, h5py, capture_spec.py / wire_spec.py) and by the CLI's own
`export`; each is then mutated — boundary values (NaN, ±inf, 1e308, 5e-324, Int64.min/max, 0, huge
counts) written into the numeric fields a small parser here finds (timestamps, clock offsets, sample
and value counts, lengths, rates, properties, header fields), or random bit flips — and each mutant
goes through `import`, `analyze`, `inspect` or `export --time-column`. Every process must end with
status 0 or a clean error (1, 2 or 3 with a message on stderr): never a signal (a Swift trap is
SIGILL / SIGTRAP), never a hang.

Reproducible: the seed is printed with every failure (TRIBUTARY_MUTATION_SEED=N picks another), and
each failing mutant is kept (in TRIBUTARY_MUTATION_KEEP=DIR, else a fresh temporary directory) with the
command that failed on it. Bounded: a few hundred mutants, ~2 processes at a time, 30 s per process.
"""
import concurrent.futures
import math
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import capture_spec as cs
import wire_spec as ws
from tool_process import TRIBUTARY, ScratchTest

SEED = int(os.environ.get("TRIBUTARY_MUTATION_SEED", "38"))
# More mutants for a deeper run by hand (TRIBUTARY_MUTATION_SCALE=10); the suite's default stays bounded.
SCALE = float(os.environ.get("TRIBUTARY_MUTATION_SCALE", "1"))
PROCESS_TIMEOUT = 30
T0 = 1_764_489_600_123_456_789
I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1

F64_VALUES = [math.nan, -math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324, 1e-300, 0.0, -0.0,
              9.3e18, -9.3e18, 1.8e19, 9.2e9, -9.2e9, 2.0**63, 1e15]
I64_VALUES = [I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1, 0, -1, 2**62, -(2**62), 2**53 + 1]
U64_VALUES = [0, 1, 2**31 - 1, 2**32 - 1, 2**32, 2**53, 2**62, 2**63 - 1, 2**63, U64_MAX - 1, U64_MAX]
U32_VALUES = [0, 1, 2, 7, 255, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]
U16_VALUES = [0, 1, 2, 3, 8, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF]
U8_VALUES = [0, 1, 2, 4, 7, 8, 9, 0x7F, 0x80, 0xFF]
TEXT_NUMBERS = ["nan", "-nan", "inf", "-inf", "infinity", "1e308", "-1e308", "1e309", "1e-320", "5e-324", "0", "-0", "-1",
                "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615",
                "4611686018427387904", "99999999999999999999999", "0x10", "1e400", "2147483648", "65536", "70000"]
PACK = {"f64": "<d", "i64": "<q", "u64": "<Q", "u32": "<I", "i32": "<i", "u16": "<H", "u8": "<B", "f32": "<f"}


def _limit_memory():
    """Each process under test may address at most 4 GiB: a count from a file that makes it allocate
    without bound fails here (as a signal or an error) instead of taking the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def boundary(kind, rng):
    """A boundary value for a field of `kind`, packed."""
    if kind == "f64":
        return struct.pack("<d", rng.choice(F64_VALUES))
    if kind == "f32":
        return struct.pack("<f", rng.choice([math.nan, math.inf, -math.inf, 3.4e38, 1e-45, 0.0]))
    values = {"i64": I64_VALUES, "u64": U64_VALUES, "u32": U32_VALUES, "i32": [-(2**31), 2**31 - 1, -1, 0, 1],
              "u16": U16_VALUES, "u8": U8_VALUES}[kind]
    value = rng.choice(values)
    if kind == "i32":
        return struct.pack("<i", value)
    return struct.pack(PACK[kind], value)


def write_field(data, field, rng):
    """`data` with a boundary value written into `field` (offset, kind, label)."""
    offset, kind, label = field
    value = boundary(kind, rng)
    out = bytearray(data)
    out[offset:offset + len(value)] = value
    return bytes(out), f"{label} at byte {offset} := {value.hex()} ({kind})"


def flip_bits(data, rng, start=0):
    """`data` with 1-4 random bits flipped or bytes set to 0x00 / 0xFF (at or after `start`)."""
    out = bytearray(data)
    steps = []
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(start, len(out))
        if rng.random() < 0.7:
            bit = rng.randrange(8)
            out[at] ^= 1 << bit
            steps.append(f"bit {bit} of byte {at}")
        else:
            out[at] = rng.choice([0x00, 0xFF])
            steps.append(f"byte {at} := {out[at]:#04x}")
    return bytes(out), "flipped " + ", ".join(steps)


def mutate(data, fields, rng, field_share=0.6, start=0):
    """One mutant of `data`: boundary values in 1-2 of its `fields` (most often) or bit flips."""
    if fields and rng.random() < field_share:
        out, what = data, []
        # Times, rates and offsets (f64 / i64) are fewer than lengths and counts: half the picks go to them.
        values = [f for f in fields if f[1] in ("f64", "i64")]
        pool = values if values and rng.random() < 0.5 else fields
        for field in rng.sample(pool, min(len(pool), rng.choice([1, 1, 2]))):
            out, w = write_field(out, field, rng)
            what.append(w)
        return out, "; ".join(what)
    return flip_bits(data, rng, start)


# MARK: XDF


def xdf_chunk(tag, content, length_bytes=4):
    fmt = {1: "<B", 4: "<I", 8: "<Q"}[length_bytes]
    return bytes([length_bytes]) + struct.pack(fmt, len(content) + 2) + struct.pack("<H", tag) + content


def xdf_header_xml(name, channels, fmt, rate, source_id="", channel_count=None, extra=""):
    labels = "".join(f"<channel><label>c{k}</label><unit>V</unit></channel>" for k in range(channels))
    count = channels if channel_count is None else channel_count
    return (f'<?xml version="1.0"?><info><name>{name}</name><type>EEG</type><channel_count>{count}</channel_count>'
            f"<nominal_srate>{rate}</nominal_srate><channel_format>{fmt}</channel_format><source_id>{source_id}</source_id>"
            f"<desc><channels>{labels}</channels>{extra}</desc></info>").encode()


XDF_CODES = {"float32": "f", "double64": "d", "int8": "b", "int16": "h", "int32": "i", "int64": "q"}


def minimal_xdf(rng, header_override=None):
    """An XDF file written from the specification: a regular float32 stream stamped per chunk, an
    irregular double64 stream stamped per sample with two clock offsets, an int16 stream with
    scaling, and a string marker stream. `header_override` = (stream index, tag, text) replaces one
    header field's text."""
    streams = [
        {"id": 1, "name": "EEG", "fmt": "float32", "rate": "250", "channels": 3, "n": 150, "stamp": "chunk", "offsets": [(100.0, 0.25)]},
        {"id": 2, "name": "Irregular", "fmt": "double64", "rate": "0", "channels": 2, "n": 40, "stamp": "sample",
         "offsets": [(100.0, 0.5), (104.0, 0.5001)]},
        {"id": 5, "name": "Counts", "fmt": "int16", "rate": "100", "channels": 2, "n": 60, "stamp": "chunk", "offsets": [],
         "extra": "<scaling><channel><scale>0.5</scale><offset>1</offset></channel><channel><scale>2</scale><offset>0</offset></channel></scaling>"},
        {"id": 9, "name": "Markers", "fmt": "string", "rate": "0", "channels": 1, "n": 5, "stamp": "sample", "offsets": []},
    ]
    out = b"XDF:" + xdf_chunk(1, b'<?xml version="1.0"?><info><version>1.0</version></info>')
    for k, s in enumerate(streams):
        fields = {"channel_count": str(s["channels"]), "nominal_srate": s["rate"], "channel_format": s["fmt"]}
        if header_override and header_override[0] == k:
            fields[header_override[1]] = header_override[2]
        xml = xdf_header_xml(s["name"], s["channels"], fields["channel_format"], fields["nominal_srate"],
                             source_id=f"tributary-source-{s['id'] * 3}", extra=s.get("extra", "")).decode()
        xml = xml.replace(f"<channel_count>{s['channels']}</channel_count>", f"<channel_count>{fields['channel_count']}</channel_count>")
        out += xdf_chunk(2, struct.pack("<I", s["id"]) + xml.encode())
    for s in streams:
        for t, v in s["offsets"][:1]:
            out += xdf_chunk(4, struct.pack("<Idd", s["id"], t, v))
    for s in streams:
        rate = float(s["rate"]) or 7.0
        for start in range(0, s["n"], 32):
            count = min(32, s["n"] - start)
            body = struct.pack("<I", s["id"]) + (bytes([1, count]) if rng.random() < 0.7 else bytes([4]) + struct.pack("<I", count))
            for k in range(count):
                t = 100.0 + (start + k) / rate
                stamped = s["stamp"] == "sample" or k == 0
                body += (bytes([8]) + struct.pack("<d", t)) if stamped else bytes([0])
                if s["fmt"] == "string":
                    text = f"marker {start + k}".encode()
                    body += bytes([1, len(text)]) + text
                else:
                    values = [rng.randint(-100, 100) for _ in range(s["channels"])]
                    body += struct.pack("<" + XDF_CODES[s["fmt"]] * s["channels"], *values)
            out += xdf_chunk(3, body, length_bytes=rng.choice([4, 4, 8]))
        out += xdf_chunk(5, bytes([0x43, 0xA5, 0x46, 0xDC, 0xCB, 0xF5, 0x41, 0x0F, 0xB3, 0x0E, 0xD5, 0x46, 0x73, 0x83, 0xCB, 0xE4]))
    for s in streams:
        for t, v in s["offsets"][1:]:
            out += xdf_chunk(4, struct.pack("<Idd", s["id"], t, v))
        out += xdf_chunk(6, struct.pack("<I", s["id"]) + b'<?xml version="1.0"?><info><first_timestamp>100</first_timestamp></info>')
    return out


def xdf_fields(data):
    """The numeric fields of an XDF file (any writer's): chunk lengths, sample counts, timestamp byte
    counts and timestamps, clock offsets, and the first value of each sample."""
    fields, streams, pos = [], {}, 4
    while pos < len(data):
        nb = data[pos]
        if nb not in (1, 4, 8) or pos + 1 + nb + 2 > len(data):
            break
        kind = {1: "u8", 4: "u32", 8: "u64"}[nb]
        fields += [(pos, "u8", "length bytes of a chunk length"), (pos + 1, kind, "chunk length")]
        length = int.from_bytes(data[pos + 1:pos + 1 + nb], "little")
        start = pos + 1 + nb
        end = start + length
        tag = struct.unpack_from("<H", data, start)[0]
        c = start + 2
        try:
            if tag == 2:
                sid = struct.unpack_from("<I", data, c)[0]
                xml = data[c + 4:end].decode("utf-8", "replace")
                channels = int(re.search(r"<channel_count>(\d+)</channel_count>", xml).group(1))
                fmt = re.search(r"<channel_format>(\w+)</channel_format>", xml).group(1)
                streams[sid] = (channels, fmt)
            elif tag == 3:
                sid = struct.unpack_from("<I", data, c)[0]
                channels, fmt = streams[sid]
                c += 4
                cb = data[c]
                fields += [(c, "u8", "length bytes of a sample count"), (c + 1, {1: "u8", 4: "u32", 8: "u64"}[cb], "sample count")]
                n = int.from_bytes(data[c + 1:c + 1 + cb], "little")
                c += 1 + cb
                for _ in range(n):
                    fields.append((c, "u8", "timestamp bytes"))
                    if data[c] == 8:
                        fields.append((c + 1, "f64", "timestamp"))
                        c += 9
                    else:
                        c += 1
                    if fmt == "string":
                        for _ in range(channels):
                            lb = data[c]
                            fields.append((c + 1, {1: "u8", 4: "u32", 8: "u64"}[lb], "string length"))
                            c += 1 + lb + int.from_bytes(data[c + 1:c + 1 + lb], "little")
                    else:
                        size = struct.calcsize(XDF_CODES[fmt])
                        if fmt == "double64":
                            fields.append((c, "f64", "value"))
                        c += channels * size
            elif tag == 4:
                fields += [(c + 4, "f64", "clock offset collection time"), (c + 12, "f64", "clock offset value")]
        except (KeyError, AttributeError, IndexError, ValueError, struct.error):
            pass
        pos = end
    return fields


# MARK: TDMS


TDMS_VALUE_SIZES = {1: 1, 2: 2, 3: 4, 4: 8, 5: 1, 6: 2, 7: 4, 8: 8, 9: 4, 10: 8, 0x19: 4, 0x1A: 8, 0x21: 1, 0x44: 16}
TDMS_VALUE_KINDS = {3: "i32", 4: "i64", 7: "u32", 8: "u64", 10: "f64", 0x1A: "f64", 9: "f32"}


def tdms_fields(data):
    """The numeric fields of a little-endian TDMS file: lead-in offsets, object and property counts,
    raw data indexes (type, dimension, value count, string bytes) and numeric property values."""
    fields, pos = [], 0
    while pos + 28 <= len(data) and data[pos:pos + 4] == b"TDSm":
        toc, _, nxt, _ = struct.unpack_from("<IIQQ", data, pos + 4)
        fields += [(pos + 4, "u32", "ToC mask"), (pos + 12, "u64", "next segment offset"), (pos + 20, "u64", "raw data offset")]
        m = pos + 28
        try:
            if toc & 2:
                fields.append((m, "u32", "object count"))
                count = struct.unpack_from("<I", data, m)[0]
                m += 4
                for _ in range(count):
                    fields.append((m, "u32", "object path length"))
                    m += 4 + struct.unpack_from("<I", data, m)[0]
                    index = struct.unpack_from("<I", data, m)[0]
                    fields.append((m, "u32", "raw data index length"))
                    m += 4
                    if index not in (0, 0xFFFFFFFF):
                        dtype = struct.unpack_from("<I", data, m)[0]
                        fields += [(m, "u32", "data type"), (m + 4, "u32", "array dimension"), (m + 8, "u64", "value count")]
                        m += 16
                        if dtype == 0x20:
                            fields.append((m, "u64", "string bytes"))
                            m += 8
                    fields.append((m, "u32", "property count"))
                    properties = struct.unpack_from("<I", data, m)[0]
                    m += 4
                    for _ in range(properties):
                        m += 4 + struct.unpack_from("<I", data, m)[0]
                        ptype = struct.unpack_from("<I", data, m)[0]
                        fields.append((m, "u32", "property type"))
                        m += 4
                        if ptype == 0x20:
                            fields.append((m, "u32", "property string length"))
                            m += 4 + struct.unpack_from("<I", data, m)[0]
                        elif ptype == 0x44:
                            fields += [(m, "u64", "timestamp fraction"), (m + 8, "i64", "timestamp seconds")]
                            m += 16
                        elif ptype in TDMS_VALUE_SIZES:
                            if ptype in TDMS_VALUE_KINDS:
                                fields.append((m, TDMS_VALUE_KINDS[ptype], "property value"))
                            m += TDMS_VALUE_SIZES[ptype]
                        else:
                            break
        except struct.error:
            pass
        if nxt == U64_MAX:
            break
        pos += 28 + nxt
    return fields


def nptdms_file(path, rng):
    from nptdms import ChannelObject, GroupObject, RootObject, TdmsWriter
    n = 300
    t = np.arange(n) / 1000.0
    with TdmsWriter(path) as w:
        for part in range(2):
            sl = slice(part * 150, (part + 1) * 150)
            props = {"wf_increment": 1e-3, "wf_start_time": np.datetime64("2025-11-30T12:00:00.25", "ns"), "unit_string": "V"} if part == 0 else {}
            objs = [ChannelObject("Dev1", "ai0", np.sin(t[sl]), properties=props),
                    ChannelObject("Dev1", "ai1", np.cos(t[sl]).astype(np.float32), properties=props),
                    ChannelObject("Counter", "n", (np.arange(n)[sl] % 1000).astype(np.int16),
                                  properties={"wf_increment": 0.01, "NI_Number_Of_Scales": 1, "NI_Scale[0]_Scale_Type": "Linear",
                                              "NI_Scale[0]_Linear_Slope": 0.5, "NI_Scale[0]_Linear_Y_Intercept": 1.0} if part == 0 else {}),
                    ChannelObject("Names", "label", np.array([f"x{k}" for k in range(3)]))]
            if part == 0:
                objs = [RootObject({"title": "mutations"}), GroupObject("Dev1", {"device_name": "cDAQ", "source_id": 4})] + objs
            w.write_segment(objs)


def npy_bytes(descr, shape, body):
    """An NPY 1.0 file with this header text (padded as numpy pads it) and data bytes."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body


# MARK: Captures and frame files


def capture_with(times, rate=1000.0, first_samples=None, counts=False, n=50):
    """A capture of one source: a configuration at `rate` and analog frames of `n` samples at `times`."""
    config = ws.frame("configuration", ws.configuration("dev", "sim", [(0, 0, rate, -10, 10, "ai0", "V"), (1, 0, rate, -10, 10, "ai1", "V")], []),
                      sequence=0, timestamp_ns=times[0], source_id=1)
    frames = [config]
    for k, t in enumerate(times):
        first = first_samples[k] if first_samples else k * n
        rows = [[float(k + s / n) for s in range(n)], [float(-k) for _ in range(n)]]
        payload = ws.analog_i16([0, 1], [[int(v) for v in r] for r in rows], [0.5, 0.25], [0, 1], first) if counts else \
            ws.analog_f64([0, 1], rows, first_sample=first)
        frames.append(ws.frame("analog", payload, sequence=k + 1, timestamp_ns=t, source_id=1))
    return cs.capture([frames[:3], frames[3:]] if len(frames) > 4 else [frames])


# MARK: The runner


class Runner:
    """Runs mutants' commands two at a time and collects every process that ended badly."""

    def __init__(self, test, name):
        self.test, self.name = test, name
        self.dir = tempfile.mkdtemp(prefix=f"tributary-mutants-{name}-")
        self.jobs = []
        self.count = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def add(self, data, suffix, description, commands):
        """A mutant (its bytes, file name suffix, what was done) and the commands to run on it:
        argument lists in which "{in}" is the mutant's path and "{out}" an output path."""
        self.count += 1
        name = f"m{self.count:04d}{suffix}"
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(data)
        for k, command in enumerate(commands):
            out = self.path(f"{name}.out{k}" + (command[-1] if command and command[-1].startswith(".") else ""))
            args = [a.replace("{in}", path).replace("{out}", out) for a in (command[:-1] if command[-1].startswith(".") else command)]
            self.jobs.append((name, description, args))

    def run(self):
        def one(job):
            name, description, args = job
            try:
                r = subprocess.run([TRIBUTARY, *args], capture_output=True, timeout=PROCESS_TIMEOUT, preexec_fn=_limit_memory)
            except subprocess.TimeoutExpired:
                return job, f"did not end within {PROCESS_TIMEOUT} s"
            if r.returncode < 0 or r.returncode not in (0, 1, 2, 3):
                tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
                return job, f"ended by signal {-r.returncode}" if r.returncode < 0 else f"exit status {r.returncode}: {tail}"
            if r.returncode != 0 and not r.stderr.strip():
                return job, f"exit status {r.returncode} without a message on stderr"
            return None

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            failures = [f for f in pool.map(one, self.jobs) if f]
        if failures:
            keep = os.environ.get("TRIBUTARY_MUTATION_KEEP") or tempfile.mkdtemp(prefix="tributary-failing-mutants-")
            os.makedirs(keep, exist_ok=True)
            lines = []
            for (name, description, args), why in failures:
                kept = os.path.join(keep, f"{self.name}-{name}")
                src = next(a for a in args if a.endswith(name))
                shutil.copyfile(src, kept)
                shown = [kept if a == src else a for a in args]
                lines.append(f"  {why}: tributary {' '.join(shown)}\n    mutant: {description}")
            shutil.rmtree(self.dir, ignore_errors=True)
            self.test.fail(f"seed {SEED} ({self.name}): {len(failures)} of {len(self.jobs)} processes failed "
                           f"(rerun with TRIBUTARY_MUTATION_SEED={SEED}):\n" + "\n".join(lines))
        shutil.rmtree(self.dir, ignore_errors=True)
        return len(self.jobs)


def cli(*args):
    result = subprocess.run([TRIBUTARY, *args], capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(args)} failed ({result.returncode}): {result.stderr}")


IMPORT = ["import", "{in}", "--out", "{out}", ".tcap"]
ANALYZE = ["analyze", "{in}", "--stats", "--json"]


class FormatMutationTests(ScratchTest, unittest.TestCase):
    """Each test builds its formats' valid files, mutates them with the shared seed and runs the commands."""

    def setUp(self):
        super().setUp()
        self.rng = random.Random(f"{SEED}-{self._testMethodName}")

    def exported(self, capture_bytes, fmt, *flags):
        """A file the CLI's own export writes from a capture."""
        src = self.path("base.tcap")
        with open(src, "wb") as f:
            f.write(capture_bytes)
        out = self.path(f"base-{fmt}{len(flags)}.{fmt}")
        cli("export", src, "--format", fmt, *flags, "--out", out, "--force")
        with open(out, "rb") as f:
            return f.read()

    def test_xdf_import_and_analyze(self):
        rng = self.rng
        runner = Runner(self, "xdf")
        bases = [minimal_xdf(random.Random(SEED)),
                 self.exported(capture_with([T0 + k * 50_000_000 for k in range(5)]), "xdf"),
                 self.exported(capture_with([T0 + k * 50_000_000 for k in range(5)], counts=True), "xdf", "--counts")]
        bases = [(b, xdf_fields(b)) for b in bases]
        self.assertTrue(all(any(f[2] == "timestamp" for f in fields) for _, fields in bases), "the parser finds the timestamps")
        for _ in range(round(110 * SCALE)):
            data, fields = rng.choice(bases)
            if rng.random() < 0.15:
                stream, tag = rng.randrange(4), rng.choice(["channel_count", "nominal_srate", "channel_format"])
                text = rng.choice(TEXT_NUMBERS + ["double64", "int64", "string", ""])
                mutant, what = minimal_xdf(random.Random(SEED), (stream, tag, text)), f"stream header {stream}: <{tag}>{text}</{tag}>"
            else:
                mutant, what = mutate(data, fields, rng, field_share=0.7, start=4)
            commands = [IMPORT, ANALYZE] if rng.random() < 0.5 else [rng.choice([IMPORT, ANALYZE])]
            runner.add(mutant, ".xdf", what, commands)
        runner.run()

    def test_tdms_import_and_analyze(self):
        rng = self.rng
        runner = Runner(self, "tdms")
        nptdms_file(self.path("np.tdms"), rng)
        with open(self.path("np.tdms"), "rb") as f:
            bases = [f.read()]
        bases.append(self.exported(capture_with([T0 + k * 50_000_000 for k in range(5)], counts=True), "tdms", "--counts"))
        bases = [(b, tdms_fields(b)) for b in bases]
        self.assertTrue(all(any(f[2] == "timestamp seconds" for f in fields) for _, fields in bases), "the parser finds wf_start_time")
        for _ in range(round(90 * SCALE)):
            data, fields = rng.choice(bases)
            mutant, what = mutate(data, fields, rng, field_share=0.7)
            rate = rng.choice([[], [], ["--rate", rng.choice(["1e-300", "5e-324", "1e308", "1", "1e12"])]])
            commands = [IMPORT[:-1] + rate + [".tcap"], ANALYZE + rate] if rng.random() < 0.5 else [rng.choice([IMPORT[:-1] + rate + [".tcap"], ANALYZE])]
            runner.add(mutant, ".tdms", what + (f" with {' '.join(rate)}" if rate else ""), commands)
        runner.run()

    def test_npy_wav_and_csv_import(self):
        rng = self.rng
        runner = Runner(self, "arrays")
        buf = self.path("base.npy")
        np.save(buf, np.arange(24, dtype=np.float64).reshape(2, 12))
        with open(buf, "rb") as f:
            npy = f.read()
        shapes = ["(9223372036854775807,)", "(2, 9223372036854775807)", "(4611686018427387904, 4)", "(0, 12)", "(2, 0)",
                  "(70000, 1)", "(1, 3, 4)", "()", "(3074457345618258602, 3)", "(65536, 0)"]
        for _ in range(round(40 * SCALE)):
            if rng.random() < 0.5:
                descr, shape = "<f8", "(2, 12)"
                if rng.random() < 0.7:
                    shape = rng.choice(shapes)
                else:
                    descr = rng.choice(["<i2", "<f4", "<i8", ">f8", "|u1"])
                mutant, what = npy_bytes(descr, shape, npy[128:]), f"NPY descr {descr} shape {shape}"
            else:
                mutant, what = mutate(npy, [(8, "u16", "header length")], rng, field_share=0.3)
            rate = rng.choice(["10", "1e-300", "5e-324", "1e308", "4e9"])
            runner.add(mutant, ".npy", what + f" (rate {rate})", [["import", "{in}", "--rate", rate, "--out", "{out}", ".tcap"], ANALYZE + ["--rate", rate]])
        from scipy.io import wavfile
        for dtype in (np.int16, np.float32):
            wavfile.write(self.path("base.wav"), 8000, (np.arange(40).reshape(20, 2) * 100).astype(dtype))
            with open(self.path("base.wav"), "rb") as f:
                wav = f.read()
            fields = [(4, "u32", "RIFF size"), (16, "u32", "fmt size"), (20, "u16", "format tag"), (22, "u16", "channels"),
                      (24, "u32", "sample rate"), (28, "u32", "byte rate"), (32, "u16", "block align"), (34, "u16", "bits per sample"),
                      (40, "u32", "data size")]
            for _ in range(round(20 * SCALE)):
                mutant, what = mutate(wav, fields, rng, field_share=0.8)
                runner.add(mutant, ".wav", what, [IMPORT])
        csv = "a,b\n" + "".join(f"{k},{-k * 0.5}\n" for k in range(20))
        for _ in range(round(20 * SCALE)):
            lines = csv.splitlines()
            row = rng.randrange(1, len(lines))
            cells = lines[row].split(",")
            cells[rng.randrange(2)] = rng.choice(TEXT_NUMBERS + ["9" * 400, "1e-99999", "-" + "9" * 310])
            lines[row] = ",".join(cells)
            rate = rng.choice(["10", "1e-300", "1e308"])
            runner.add(("\n".join(lines) + "\n").encode(), ".csv", f"line {row + 1}: {lines[row]} (rate {rate})",
                       [["import", "{in}", "--rate", rate, "--out", "{out}", ".tcap"]])
        runner.run()

    def test_hdf5_import_and_analyze(self):
        import h5py
        rng = self.rng
        runner = Runner(self, "hdf5")
        floats = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 1e-300, 0.0, -1.0, 9.3e18, 2.0**63, 1000.0]
        for k in range(round(45 * SCALE)):
            path = self.path(f"h{k}.h5")
            what = []
            with h5py.File(path, "w") as f:
                g = f.create_group("rig")
                d = g.create_dataset("data", data=np.arange(40, dtype=rng.choice([np.float64, np.int16, np.float32])).reshape(2, 20))

                def attribute(obj, name, choices):
                    if rng.random() < 0.5:
                        value = rng.choice(choices)
                        obj.attrs[name] = value
                        what.append(f"{name}={value!r}")
                attribute(g, "sample_rate", floats + [np.int64(I64_MAX), np.uint64(U64_MAX)])
                attribute(d, "start_time_ns", floats + [np.int64(I64_MIN), np.int64(I64_MAX), np.uint64(U64_MAX), np.int64(T0)])
                attribute(g, "source_id", [np.float64(math.nan), np.int64(-1), np.int64(2**32), np.float64(1e300)])
                attribute(d, "scale", [[math.nan, math.inf], [1.0], [1e308, 1e308]])
                if rng.random() < 0.5:
                    starts = rng.choice([[0, 10], [0, 5.5], [0, math.nan], [0, 1e300], [0, 2**62], [0, -1], [0, 19]])
                    times = rng.choice([[T0, T0 + 10**7], [I64_MIN, I64_MAX], [math.nan, 0], [1e300, -1e300], [I64_MAX, I64_MAX], [0, 2**63]])
                    dtype = np.float64 if any(isinstance(v, float) for v in starts + times) or max(times) > I64_MAX else np.int64
                    g.create_dataset("block_start", data=np.array(starts, dtype=np.float64 if any(isinstance(v, float) for v in starts) else np.int64))
                    g.create_dataset("block_time_ns", data=np.array(times, dtype=np.float64 if dtype is np.float64 or any(isinstance(v, float) for v in times) else np.int64))
                    what.append(f"block_start={starts} block_time_ns={times}")
                if rng.random() < 0.15:
                    shape = rng.choice([(2, 2**40), (2**31, 2**31), (3, 2**62), (1, 2**33)])
                    f.create_dataset("claimed", shape=shape, dtype="f8", chunks=(1, 1024), maxshape=(None, None))
                    what.append(f"dataset of shape {shape} without data")
                if "sample_rate" not in g.attrs:
                    g.attrs["sample_rate"] = 1000.0
            with open(path, "rb") as f:
                data = f.read()
            rate = ["--rate", rng.choice(["1e-300", "1e308"])] if rng.random() < 0.3 else []
            runner.add(data, ".h5", ", ".join(what) + (f" with {' '.join(rate)}" if rate else ""),
                       [IMPORT[:-1] + rate + [".tcap"], ANALYZE + rate])
        runner.run()

    def test_capture_export_time_column_inspect_and_analyze(self):
        rng = self.rng
        runner = Runner(self, "capture")
        exports = [["export", "{in}", "--format", "csv", "--time-column", "--out", "{out}", ".csv"],
                   ["export", "{in}", "--format", "xdf", "--out", "{out}", ".xdf"],
                   ["export", "{in}", "--format", "tdms", "--out", "{out}", ".tdms"],
                   ["export", "{in}", "--format", "hdf5", "--out", "{out}", ".h5"],
                   ["export", "{in}", "--format", "npy", "--start", "0.01", "--duration", "0.02", "--out", "{out}", ".npy"],
                   ["inspect", "{in}"], ANALYZE]
        for _ in range(round(45 * SCALE)):
            times = [T0 + k * 50_000_000 for k in range(5)]
            what = []
            for _ in range(rng.choice([1, 1, 2])):
                k = rng.randrange(len(times))
                times[k] = rng.choice(I64_VALUES)
                what.append(f"frame {k} at {times[k]} ns")
            rate = 1000.0
            if rng.random() < 0.4:
                rate = rng.choice([1e-300, 5e-324, 1e308, 1e-9, 4e9, math.nan, math.inf, 0.0])
                what.append(f"rate {rate}")
            first = None
            if rng.random() < 0.3:
                first = [rng.choice([0, 50, U64_MAX - 10, U64_MAX, 2**63]) for _ in times]
                what.append(f"first_sample {first}")
            data = capture_with(times, rate=rate, first_samples=first, counts=rng.random() < 0.3)
            runner.add(data, ".tcap", "; ".join(what), rng.sample(exports, 3))
        # Frame files: `inspect` prints every frame's time, `analyze` reads them.
        for _ in range(round(15 * SCALE)):
            frames = b"".join(ws.frame("analog", ws.analog_f64([rng.choice([0, 2**32 - 1]), 2**32 - 1], [[1.0, 2.0], [3.0, 4.0]],
                                                                rng.choice([0, U64_MAX])),
                                       sequence=k, timestamp_ns=rng.choice(I64_VALUES), source_id=1) for k in range(3))
            runner.add(frames, ".frames", "frames at boundary times and channel indexes", [["inspect", "{in}"], ["inspect", "{in}", "--json"], ANALYZE])
        runner.run()


def xdf_stream(timestamps, rate="100", offsets=(), stamped=None):
    """An XDF file of one double64 stream (id 1, one channel) whose samples carry `timestamps`
    (None: unstamped), in one chunk, and clock offsets (time, value) after it."""
    body = struct.pack("<I", 1) + bytes([4]) + struct.pack("<I", len(timestamps))
    for k, t in enumerate(timestamps):
        body += (bytes([0]) if t is None else bytes([8]) + struct.pack("<d", t)) + struct.pack("<d", float(k))
    out = b"XDF:" + xdf_chunk(1, b'<?xml version="1.0"?><info><version>1.0</version></info>')
    out += xdf_chunk(2, struct.pack("<I", 1) + xdf_header_xml("S", 1, "double64", rate))
    out += xdf_chunk(3, body)
    for t, v in offsets:
        out += xdf_chunk(4, struct.pack("<Idd", 1, t, v))
    return out


class TargetedTrapTests(ScratchTest, unittest.TestCase):
    """One case per trap issue 38 fixed in the format code, each of which stopped the process
    (SIGILL) before the fix: the file now gives a clean error naming it and what is wrong, or is
    read, when it holds nothing wrong."""

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return self.path(name)

    def tributary(self, *args):
        r = subprocess.run([TRIBUTARY, *args], capture_output=True, text=True, timeout=PROCESS_TIMEOUT, preexec_fn=_limit_memory)
        self.assertGreaterEqual(r.returncode, 0, f"tributary {' '.join(args)} ended by signal {-r.returncode}: {r.stderr[-2000:]}")
        return r

    def assertRefused(self, args, *needles):
        r = self.tributary(*args)
        self.assertEqual(r.returncode, 1, f"tributary {' '.join(args)}: {r.stdout} {r.stderr}")
        for needle in needles:
            self.assertIn(needle, r.stderr)
        return r

    def assertRead(self, args):
        r = self.tributary(*args)
        self.assertEqual(r.returncode, 0, f"tributary {' '.join(args)}: {r.stderr}")
        return r

    def test_xdf_nan_and_infinite_timestamps_are_refused_at_their_byte_offset(self):
        for name, stamps in [("nan.xdf", [math.nan, 1.0, 2.0]), ("inf.xdf", [0.0, None, math.inf]), ("minf.xdf", [0.0, -math.inf, 0.02])]:
            path = self.write(name, xdf_stream(stamps))
            for command in (["import", path, "--out", self.path(name + ".tcap")], ["analyze", path]):
                self.assertRefused(command, path, "byte offset", "not a finite number of seconds")

    def test_xdf_clock_offsets_that_add_up_to_infinity_are_refused(self):
        path = self.write("o.xdf", xdf_stream([0.0, 0.01, 0.02], offsets=[(1e308, 0.0), (1e308, 1.0)]))
        self.assertRefused(["import", path, "--out", self.path("o.tcap")], path, "clock offsets give no finite correction")
        self.assertRefused(["analyze", path], "clock offsets give no finite correction")
        path = self.write("nan-offset.xdf", xdf_stream([0.0, 0.01], offsets=[(0.0, math.nan)]))
        self.assertRefused(["import", path, "--out", self.path("n.tcap")], "byte offset", "clock offset of stream 1")

    def test_xdf_times_beyond_timestamp_ns_are_refused(self):
        for stamps, offsets in [([1e300, 1e300 + 1e290], []), ([0.0, 0.01], [(0.0, 9.3e9)]), ([0.0, None, -9.3e9], [])]:
            path = self.write("far.xdf", xdf_stream(stamps, offsets=offsets))
            self.assertRefused(["import", path, "--out", self.path("far.tcap")], "beyond the range of timestamp_ns")

    def test_xdf_irregular_stream_whose_timestamps_give_no_rate(self):
        path = self.write("r.xdf", xdf_stream([-1e308, 1e308], rate="0"))
        self.assertRefused(["import", path, "--out", self.path("r.tcap")], "no sampling rate")
        path = self.write("rinf.xdf", xdf_stream([0.0, 0.01], rate="inf"))
        self.assertRefused(["analyze", path], "nominal_srate 'inf' is not a finite number")

    def test_xdf_fast_stream_with_a_long_hole_is_imported(self):
        # 1e12 Hz and a hole of 1e8 s: the samples the hole stands for (1e20) are beyond any counter; they are capped.
        path = self.write("fast.xdf", xdf_stream([0.0, None, 1e8, None], rate="1e12"))
        self.assertRead(["import", path, "--out", self.path("fast.tcap")])
        self.assertRead(["analyze", path])
        # A rate no configuration holds is refused (it was stored, and the capture could not be read back).
        path = self.write("faster.xdf", xdf_stream([0.0, None, 5.0, None], rate="1e308"))
        self.assertRefused(["import", path, "--out", self.path("faster.tcap")], "1e+308 Hz is outside what a capture's configuration holds")

    def tdms_with(self, patch, increment=1e-3):
        """An npTDMS file of one float64 channel with wf_increment and wf_start_time, and `patch(data, fields)` applied."""
        from nptdms import ChannelObject, TdmsWriter
        with TdmsWriter(self.path("base.tdms")) as w:
            w.write_segment([ChannelObject("G", "x", np.arange(300, dtype=np.float64),
                                           properties={"wf_increment": increment, "wf_start_time": np.datetime64("2025-11-30T12:00:00", "ns")})])
        with open(self.path("base.tdms"), "rb") as f:
            data = bytearray(f.read())
        patch(data, tdms_fields(bytes(data)))
        return self.write("patched.tdms", bytes(data))

    def test_tdms_start_time_beyond_timestamp_ns_is_refused(self):
        for seconds in (I64_MAX, I64_MIN, 2_082_844_800 + 9_223_372_037):
            def patch(data, fields):
                offset = next(o for o, _, label in fields if label == "timestamp seconds")
                data[offset:offset + 8] = struct.pack("<q", seconds)
            path = self.tdms_with(patch)
            self.assertRefused(["import", path, "--out", self.path("t.tcap")], "wf_start_time", "beyond the range of timestamp_ns")
            self.assertRefused(["analyze", path], "wf_start_time")

    def test_tdms_samples_that_run_beyond_timestamp_ns_are_refused(self):
        def near_the_end(data, fields):  # the first sample 2 s before the last time timestamp_ns holds (2262)
            offset = next(o for o, _, label in fields if label == "timestamp seconds")
            data[offset:offset + 8] = struct.pack("<q", 2_082_844_800 + 9_223_372_034)
        path = self.tdms_with(near_the_end, increment=1.0)
        self.assertRefused(["import", path, "--out", self.path("t.tcap")], "300 samples at 1.0 Hz", "beyond the range of timestamp_ns")
        self.assertRefused(["analyze", path], "beyond the range of timestamp_ns")
        for increment in (1e300, 1e-300):
            path = self.tdms_with(lambda data, fields: None, increment=increment)
            self.assertRefused(["import", path, "--out", self.path("t.tcap")], "Hz is outside what a capture's configuration holds")
        from nptdms import ChannelObject, TdmsWriter
        with TdmsWriter(self.path("norate.tdms")) as w:
            w.write_segment([ChannelObject("G", "x", np.arange(10, dtype=np.float64))])
        self.assertRefused(["import", self.path("norate.tdms"), "--rate", "1e-300", "--out", self.path("n.tcap")], "outside what a capture's configuration holds")

    def test_hdf5_times_are_checked_and_int64_times_read_exactly(self):
        import h5py
        for name, value in [("nan", math.nan), ("far", 1e300), ("edge", 2.0**63)]:
            with h5py.File(self.path(f"{name}.h5"), "w") as f:
                d = f.create_dataset("x", data=np.arange(4.0))
                d.attrs["sample_rate"] = 10.0
                d.attrs["start_time_ns"] = value
            self.assertRefused(["import", self.path(f"{name}.h5"), "--out", self.path(f"{name}.tcap")], "start_time_ns", "timestamp_ns")
            self.assertRefused(["analyze", self.path(f"{name}.h5")], "start_time_ns")
        with h5py.File(self.path("blocks.h5"), "w") as f:
            g = f.create_group("g")
            g.create_dataset("data", data=np.arange(20.0).reshape(1, 20))
            g.attrs["sample_rate"] = 10.0
            g.create_dataset("block_start", data=np.array([0, 10], dtype=np.int64))
            g.create_dataset("block_time_ns", data=np.array([0.0, math.nan]))
        self.assertRefused(["import", self.path("blocks.h5"), "--out", self.path("b.tcap")], "block_time_ns[1] nan")
        # Int64.max read through float64 is 2^63, which no Int64 holds: it is read exactly.
        with h5py.File(self.path("max.h5"), "w") as f:
            d = f.create_dataset("x", data=np.arange(1.0))
            d.attrs["sample_rate"] = 10.0
            d.attrs["start_time_ns"] = np.int64(I64_MAX)
        self.assertRead(["import", self.path("max.h5"), "--out", self.path("max.tcap")])
        self.assertIn(str(I64_MAX), self.assertRead(["inspect", self.path("max.tcap"), "--json"]).stdout)

    def test_hdf5_dataset_dimensions_beyond_the_file_are_refused(self):
        import h5py
        for shape in [(2, 2**40), (2**31, 2**31), (3, 2**62)]:
            with h5py.File(self.path("big.h5"), "w") as f:
                f.create_dataset("claimed", shape=shape, dtype="f8", chunks=(1, 1024), maxshape=(None, None))
                f["claimed"].attrs["sample_rate"] = 10.0
            self.assertRefused(["import", self.path("big.h5"), "--out", self.path("big.tcap")], "dataset /claimed", "cannot be what the file holds")
            self.assertRefused(["analyze", self.path("big.h5")], "dataset /claimed")

    def test_export_time_column_of_frames_at_the_ends_of_int64(self):
        path = self.write("c.tcap", capture_with([I64_MIN, T0, T0 + 50_000_000, I64_MAX]))
        self.assertRead(["export", path, "--format", "csv", "--time-column", "--out", self.path("t.csv")])
        table = np.loadtxt(self.path("t.csv"), delimiter=",", skiprows=1)
        self.assertEqual(table[0, 0], 0.0)
        self.assertAlmostEqual(table[50, 0], (T0 - I64_MIN) / 1e9, delta=1e-3)
        self.assertAlmostEqual(table[150, 0], (I64_MAX - I64_MIN) / 1e9, delta=1e-3)
        self.assertTrue(np.all(np.isfinite(table)))

    def test_export_selection_of_frames_near_the_ends_of_int64_and_uint64(self):
        # A first_sample counter at the end of UInt64 wraps as the selection skips samples of its frame.
        path = self.write("s.tcap", capture_with([T0, T0 + 50_000_000, T0 + 100_000_000, I64_MAX], first_samples=[U64_MAX - 5, 50, 100, 150]))
        for fmt in ("npy", "tdms", "xdf", "hdf5"):
            self.assertRead(["export", path, "--format", fmt, "--start", "0.01", "--duration", "0.1", "--out", self.path(f"s.{fmt}")])
        self.assertEqual(np.load(self.path("s.npy")).shape, (2, 100))
        # A selection whose frame times run past the end of timestamp_ns is refused, not a trap.
        self.assertRefused(["export", path, "--format", "npy", "--start", "0.01", "--out", self.path("e.npy")], "beyond the range of timestamp_ns")

    def test_inspect_and_analyze_frames_at_any_time_and_channel_index(self):
        frames = ws.frame("analog", ws.analog_f64([2**32 - 1, 2**32 - 1], [[1.0], [2.0]]), sequence=1, timestamp_ns=0, source_id=1)
        frames += b"".join(ws.frame("analog", ws.analog_f64([0], [[1.0]], first_sample=U64_MAX), sequence=k + 2, timestamp_ns=t, source_id=1)
                           for k, t in enumerate([I64_MIN, I64_MAX, -1]))
        path = self.write("f.frames", frames)
        out = self.assertRead(["inspect", path]).stdout
        self.assertIn("t=1677-09-21T00:12:43.145224192Z", out)
        self.assertIn("t=2262-04-11T23:47:16.854775807Z", out)
        self.assertIn("t=1969-12-31T23:59:59.999999999Z", out)
        self.assertIn("4294967295,4294967295", out)
        self.assertRead(["inspect", path, "--json"])
        capture = self.write("c.tcap", capture_with([I64_MIN, T0]))
        self.assertRead(["inspect", capture])


if __name__ == "__main__":
    unittest.main()
