"""An independent writer of Tributary captures, written from docs/CAPTURE.md alone.

Chunks are stored with codec 0 (no zstd: the body is the payload), so the bytes of the chunk body
— structure, stream descriptors, per-channel regrouped numeric streams — are exactly what the spec
describes. Used by the interop tests (the Swift reader must decode them bit for bit) and by
Fuzz/make_capture_seeds.py (seeds whose bodies the fuzzer can mutate directly).
"""
import struct
import uuid as uuidlib

import numpy as np

FILE_MAGIC = bytes([0x89, 0x54, 0x43, 0x41, 0x50, 0x0D, 0x0A, 0x1A])
SYNC = bytes([0x9E, 0x54, 0x52, 0x45, 0x43, 0x0D, 0x0A, 0x1A])
TRAILER_MAGIC = bytes([0x89, 0x54, 0x43, 0x41, 0x50, 0x45, 0x4E, 0x44])
SIZES = {1: 8, 2: 4, 3: 2, 4: 4}
DTYPES = {1: "<f8", 2: "<f4", 3: "<i2"}
BIT_SHUFFLE, DELTA, QUANTISED = 1, 2, 4


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def align8(n: int) -> int:
    return (n + 7) & ~7


def header(writer="capture_spec.py", created_ns=1_764_489_600_000_000_000, uid=None, version=1) -> bytes:
    w = writer.encode()
    h = align8(44 + len(w) + 4)
    uid = uid or uuidlib.UUID(int=0x1234).bytes
    out = FILE_MAGIC + struct.pack("<HHI", version, 0, h) + uid + struct.pack("<qI", created_ns, len(w)) + w
    out += b"\0" * (h - 4 - len(out))
    return out + struct.pack("<I", crc32c(out))


def envelope(record_type, codec, payload, source_id=0, first_sequence=0, last_sequence=0, first_time_ns=0,
             last_time_ns=0, sample_count=0, frame_count=0, kind_mask=0, content_length=None, frames_length=None) -> bytes:
    content_length = len(payload) if content_length is None else content_length
    frames_length = content_length if frames_length is None else frames_length
    e = SYNC + struct.pack("<BBHIQQqqQIIIIIII", record_type, codec, 88, source_id, first_sequence, last_sequence,
                           first_time_ns, last_time_ns, sample_count, frame_count, kind_mask, len(payload),
                           content_length, frames_length, 0, crc32c(payload))
    assert len(e) == 84
    return e + struct.pack("<I", crc32c(e))


def record(env: bytes, payload: bytes) -> bytes:
    return env + payload + b"\0" * (-len(payload) % 8)


def split(frame: bytes):
    """§4.2: (samples offset, channel keys, N, format) of an analog frame that is split, else None."""
    h = struct.unpack_from("<H", frame, 8)[0]
    p = struct.unpack_from("<I", frame, 12)[0]
    if frame[5] != 3 or p < 24:
        return None
    c, n = struct.unpack_from("<II", frame, h)
    fmt = frame[h + 16]
    if c > 65535 or fmt not in SIZES:
        return None
    a = align8(24 + 4 * c)
    s = a + (16 * c if fmt in (3, 4) else 0)
    if align8(s + c * n * SIZES[fmt]) != p:
        return None
    keys = struct.unpack_from("<%dI" % c, frame, h + 24)
    return h + s, keys, n, fmt


def chunk_body(frames, delta_int16=False) -> bytes:
    """§4.1–4.3 and §5 (transforms none, or delta for int16 streams)."""
    structure = b""
    rows = {1: [], 2: [], 3: [], 4: []}
    for f in frames:
        sp = split(f)
        if sp is None:
            structure += f
            continue
        start, keys, n, fmt = sp
        length = n * SIZES[fmt]
        structure += f[:start] + f[start + len(keys) * length:]
        if length:
            for r, key in enumerate(keys):
                rows[fmt].append((key, len(rows[fmt]), f[start + r * length:start + (r + 1) * length]))
    streams = []
    for fmt in (1, 2, 3, 4):
        if not rows[fmt]:
            continue
        raw = b"".join(b for _, _, b in sorted(rows[fmt], key=lambda x: (x[0], x[1])))
        transforms = 0
        stored = raw
        if fmt == 3 and delta_int16:
            x = np.frombuffer(raw, dtype="<i2")
            d = x.copy()
            d[1:] = x[1:] - x[:-1]  # numpy int16 arithmetic wraps, as the spec's two's-complement difference
            stored, transforms = d.tobytes(), DELTA
        streams.append((fmt, transforms, len(raw), stored))
    out = struct.pack("<IHHQ", len(frames), len(streams), 0, len(structure))
    for fmt, transforms, raw_len, stored in streams:
        out += struct.pack("<BBHIQQ", fmt, transforms, 0, 0, raw_len, len(stored))
    out += structure
    for _, _, _, stored in streams:
        out += b"\0" * (-len(out) % 8) + stored
    return out


def chunk_record(frames, delta_int16=False) -> bytes:
    """A chunk record (codec 0) of frames of one source."""
    body = chunk_body(frames, delta_int16)
    seq = [struct.unpack_from("<Q", f, 16)[0] for f in frames]
    times = [struct.unpack_from("<q", f, 24)[0] for f in frames]
    samples = sum(sp[2] for sp in map(split, frames) if sp)
    mask = 0
    for f in frames:
        if f[5] < 32:
            mask |= 1 << f[5]
    return record(envelope(1, 0, body, source_id=struct.unpack_from("<I", frames[0], 32)[0], first_sequence=seq[0],
                           last_sequence=seq[-1], first_time_ns=times[0], last_time_ns=times[-1], sample_count=samples,
                           frame_count=len(frames), kind_mask=mask, frames_length=sum(map(len, frames))), body)


def configuration_record(frame) -> bytes:
    """A configuration record (§6, type 5): a copy of a configuration frame, envelope fields as in §3."""
    return record(envelope(5, 0, frame, source_id=struct.unpack_from("<I", frame, 32)[0],
                           first_sequence=struct.unpack_from("<Q", frame, 16)[0], last_sequence=struct.unpack_from("<Q", frame, 16)[0],
                           first_time_ns=struct.unpack_from("<q", frame, 24)[0], last_time_ns=struct.unpack_from("<q", frame, 24)[0],
                           frame_count=1, kind_mask=1 << 1), frame)


def clock_offset_record(offset_ns, rtt_ns, measured_at_ns, samples=8, sources=()) -> bytes:
    """A clock-offset record (§6, type 6): i64 offset, i64 rtt, i64 measured_at, u32 samples, u32 N, N u32 ids."""
    payload = struct.pack("<qqqII", offset_ns, rtt_ns, measured_at_ns, samples, len(sources))
    payload += struct.pack("<%dI" % len(sources), *sources)
    return record(envelope(6, 0, payload, first_time_ns=measured_at_ns, last_time_ns=measured_at_ns), payload)


def capture(chunks, footer=True, delta_int16=False, configurations=(), clock_offsets=()) -> bytes:
    """A capture of the given chunks (lists of frames), then a configuration record for each of
    `configurations` (configuration frames) and a clock-offset record for each of `clock_offsets`
    (keyword arguments of `clock_offset_record`), with a footer and trailer unless footer=False."""
    out = header()
    entries = b""
    records = [chunk_record(frames, delta_int16) for frames in chunks] + [configuration_record(f) for f in configurations]
    records += [clock_offset_record(**o) for o in clock_offsets]
    for rec in records:
        entries += struct.pack("<Q", len(out)) + rec[8:88]
        out += rec
    if footer:
        payload = struct.pack("<IIQ", len(records), 0, 0) + entries
        offset = len(out)
        out += record(envelope(4, 0, payload), payload) + struct.pack("<Q", offset) + TRAILER_MAGIC
    return out
