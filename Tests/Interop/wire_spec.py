"""An independent encoder for the Tributary wire format, written from docs/PROTOCOL.md alone.

Used by the interop tests to check that `tributary inspect` decodes frames written by hand from
the spec, byte for byte as the spec says.
"""
import struct

MAGIC = b"TRIB"
KINDS = {"configuration": 1, "error": 2, "analog": 3, "digital": 4, "message": 5, "xml": 6, "file": 7,
         "image": 8, "array": 9, "analog-filter": 10, "array-filter": 11, "remove-filter": 12, "signal-filter": 13, "hello": 16,
         "welcome": 17, "start": 18, "stop": 19, "select-sources": 20, "gap": 21, "close": 22, "credit": 23,
         "properties": 129}


# Extension kinds (PROTOCOL.md §2.2, §4.4, §4.9): ignorable, carrying the next sequence number unconsumed.
EXTENSION_KINDS = {"keepalive": 128, "time-probe": 130, "time-reply": 131}


def extension(kind: str, payload: bytes, sequence=0, timestamp_ns=0) -> bytes:
    """An extension frame (§2.2): source and filter 0, flags 0."""
    payload = pad8(payload)
    header = MAGIC + struct.pack("<BBHHHIQqII", 1, EXTENSION_KINDS[kind], 0, 40, 0, len(payload), sequence, timestamp_ns, 0, 0)
    return header + payload


def time_probe(probe_id, t0) -> bytes:
    """§4.9 time-probe payload: u64 probe_id, i64 t0."""
    return struct.pack("<Qq", probe_id, t0)


def parse_time_reply(payload: bytes) -> dict:
    """§4.9 time-reply payload: u64 probe_id, i64 t0, t1, t2."""
    return dict(zip(("probe_id", "t0", "t1", "t2"), struct.unpack("<Qqqq", payload)))


def pad8(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def string(s: str) -> bytes:
    u = s.encode("utf-8")
    return struct.pack("<I", len(u)) + u


def frame(kind: str, payload: bytes, sequence=0, timestamp_ns=0, source_id=0, filter_id=0, flags=0) -> bytes:
    payload = pad8(payload)
    header = MAGIC + struct.pack("<BBHHHIQqII", 1, KINDS[kind], flags, 40, 0, len(payload),
                                 sequence, timestamp_ns, source_id, filter_id)
    assert len(header) == 40
    return header + payload


# Flag bit 9 (PROTOCOL.md §3.2): on a hello "I accept compact header parts", on a welcome "and I read them".
COMPACT_HEADERS = 1 << 9
HEADER_FIELDS = ("version", "kind", "flags", "header_length", "payload_length", "sequence", "timestamp_ns",
                 "source_id", "filter_id")


def expand_compact(part: bytes) -> bytes:
    """The 40-byte header that a 32-byte compact header part stands for (PROTOCOL.md §3.2)."""
    assert len(part) == 32, len(part)
    return MAGIC + part[0:4] + struct.pack("<HH", 40, 0) + part[4:32]


def compact(whole: bytes) -> bytes:
    """The 32-byte compact header part of a whole frame made by `frame` (PROTOCOL.md §3.2): the header
    without `magic`, `header_length` and the reserved u16; the payload, if any, goes in the next part."""
    return whole[4:8] + whole[12:40]


def parse_header(header: bytes) -> dict:
    """The fields of a 40-byte header (PROTOCOL.md §2), checked as §2 says."""
    assert header[:4] == MAGIC, header[:4]
    values = struct.unpack_from("<BBHHxxIQqII", header, 4)
    fields = dict(zip(HEADER_FIELDS, values))
    assert fields["version"] == 1 and fields["header_length"] >= 40 and fields["payload_length"] % 8 == 0, fields
    return fields


def configuration(device_name, device_type, channels, lines) -> bytes:
    """channels: (index, direction, rate, min, max, description, unit); lines: (index, direction, description)"""
    out = string(device_name) + string(device_type) + struct.pack("<I", len(channels))
    for index, direction, rate, lo, hi, description, unit in channels:
        out += struct.pack("<IBddd", index, direction, rate, lo, hi) + string(description) + string(unit)
    out += struct.pack("<I", len(lines))
    for index, direction, description in lines:
        out += struct.pack("<IB", index, direction) + string(description)
    return out


def _analog(sample_type, letter, channel_indexes, rows, first_sample, scale_offset=b"") -> bytes:
    """An analog payload (§5.3): the header with `sample_type`, the channel indexes, `scale_offset`
    (int16 only), then each row's samples packed as struct `letter`."""
    n = len(rows[0]) if rows else 0
    out = struct.pack("<IIQB7x", len(rows), n, first_sample, sample_type)
    out = pad8(out + struct.pack("<%dI" % len(rows), *channel_indexes)) + scale_offset
    for row in rows:
        out += struct.pack("<%d%s" % (n, letter), *row)
    return out


def analog_f64(channel_indexes, rows, first_sample=0) -> bytes:
    return _analog(1, "d", channel_indexes, rows, first_sample)


def analog_i16(channel_indexes, rows, scale, offset, first_sample=0) -> bytes:
    scale_offset = struct.pack("<%dd" % len(rows), *scale) + struct.pack("<%dd" % len(rows), *offset)
    return _analog(3, "h", channel_indexes, rows, first_sample, scale_offset)


def analog_i32(channel_indexes, rows, scale, offset, first_sample=0) -> bytes:
    """§5.3 sample_format 4: int32 counts with a scale and offset per row, as format 3."""
    n = len(rows[0]) if rows else 0
    out = struct.pack("<IIQB7x", len(rows), n, first_sample, 4)
    out = pad8(out + struct.pack("<%dI" % len(rows), *channel_indexes))
    out += struct.pack("<%dd" % len(rows), *scale) + struct.pack("<%dd" % len(rows), *offset)
    for row in rows:
        out += struct.pack("<%di" % n, *row)
    return pad8(out)


def digital(line_indexes, lines, first_sample=0) -> bytes:
    n = len(lines[0]) if lines else 0
    out = pad8(struct.pack("<IIQ", len(lines), n, first_sample) + struct.pack("<%dI" % len(lines), *line_indexes))
    for line in lines:
        row = bytearray((n + 7) // 8)
        for s, on in enumerate(line):
            if on:
                row[s // 8] |= 1 << (s % 8)
        out += bytes(row)
    return out


def message(code, text) -> bytes:
    return struct.pack("<i", code) + string(text)


def string_array(rows) -> bytes:
    r, c = len(rows), len(rows[0]) if rows else 0
    out = struct.pack("<B3xIIIIxxxx", 7, r, c, 0, 0)
    offsets, text = [0], b""
    for row in rows:
        for s in row:
            text += s.encode("utf-8")
            offsets.append(len(text))
    return pad8(out + struct.pack("<%dI" % len(offsets), *offsets)) + text


def numeric_array(type_code, fmt, rows, row_origin=0, column_origin=0) -> bytes:
    r, c = len(rows), len(rows[0]) if rows else 0
    out = struct.pack("<B3xIIIIxxxx", type_code, r, c, row_origin, column_origin)
    for row in rows:
        out += struct.pack("<%d%s" % (c, fmt), *row)
    return out


def analog_filter(mode, frm=0, to=0, channels=(), sources=(), replaces=0) -> bytes:
    return struct.pack("<IB3xIIII", replaces, mode, frm, to, len(channels), len(sources)) + \
        struct.pack("<%dI" % len(channels), *channels) + struct.pack("<%dI" % len(sources), *sources)


def signal_filter(source_id, decimate=0, ftype=0, lowpass_order=0, decimate_order=0, lowpass_cutoff=0.0,
                  reserved=0) -> bytes:
    """PROTOCOL.md §5.18: u32 source_id, u32 decimate, u8 decimate_ftype, u8 lowpass_order,
    u16 decimate_order, u32 reserved, f64 lowpass_cutoff."""
    return struct.pack("<IIBBHId", source_id, decimate, ftype, lowpass_order, decimate_order, reserved, lowpass_cutoff)


def hello(api_key, description, timeout=10.0, source_filter=False) -> bytes:
    return struct.pack("<dB7x", timeout, 1 if source_filter else 0) + string(api_key) + string(description)


def gap(first, count) -> bytes:
    return struct.pack("<QQ", first, count)


def error(code, text) -> bytes:
    return struct.pack("<I", code) + string(text)


def xml(text) -> bytes:
    return string(text)


def blob(transfer_id, total_size, chunk_offset, chunk_index, chunk_count, md5, image_format, content, name,
         attributes=()) -> bytes:
    out = struct.pack("<QQQII", transfer_id, total_size, chunk_offset, chunk_index, chunk_count)
    out += (md5 or b"\0" * 16) + struct.pack("<BB2xI", 1 if md5 else 0, image_format, len(content))
    out = pad8(out + content) + string(name) + struct.pack("<I", len(attributes))
    for a in attributes:
        out += string(a)
    return out


def array_filter(element_type, row_from, row_to, column_from, column_to, replaces=0) -> bytes:
    return struct.pack("<IB3xIIII", replaces, element_type, row_from, row_to, column_from, column_to)


def welcome(session_id, description, sources) -> bytes:
    out = struct.pack("<Q", session_id) + string(description) + struct.pack("<I", len(sources))
    for source_id, source_description in sources:
        out += struct.pack("<I", source_id) + string(source_description)
    return out


def select_sources(ids) -> bytes:
    return struct.pack("<I%dI" % len(ids), len(ids), *ids)


def close(code, reason) -> bytes:
    return struct.pack("<I", code) + string(reason)


def credit(n) -> bytes:
    return struct.pack("<I", n)


def properties(source, channels) -> bytes:
    """PROTOCOL.md §5.18: `source` a list of (key, value), `channels` a list of (index, [(key, value)])."""
    def pairs(items):
        return struct.pack("<I", len(items)) + b"".join(string(k) + string(v) for k, v in items)
    return pairs(source) + struct.pack("<I", len(channels)) + b"".join(struct.pack("<I", i) + pairs(p) for i, p in channels)


def analog_f32(channel_indexes, rows, first_sample=0) -> bytes:
    return _analog(2, "f", channel_indexes, rows, first_sample)


def one_of_every_kind():
    """One valid frame of every kind (the fuzzers' seed corpus)."""
    import hashlib
    content = bytes(range(200))
    return {
        "configuration": frame("configuration", configuration("dev", "sim", [(0, 0, 1000.0, -1.0, 1.0, "ai0", "V")],
                                                              [(0, 1, "do0")]), source_id=1),
        "error": frame("error", error(1, "wrong API key")),
        "analog": frame("analog", analog_f64([0, 1], [[1.0, 2.0], [3.0, 4.0]], 5), source_id=1),
        "analog-f32": frame("analog", analog_f32([2], [[1.5, -2.5, 3.25]])),
        "analog-i16": frame("analog", analog_i16([0], [[1, -1]], [0.5], [0.0])),
        "digital": frame("digital", digital([0, 1], [[1, 0, 1], [0, 1, 1]])),
        "message": frame("message", message(3, "hello")),
        "xml": frame("xml", xml("<a x='1'>ü</a>")),
        "file": frame("file", blob(1, 200, 0, 0, 1, hashlib.md5(content).digest(), 0, content, "f.bin", ["a=b"])),
        "image": frame("image", blob(2, 4, 0, 0, 2, None, 1, b"\x89PNG"[:2], "pic", [])),
        "array-double": frame("array", numeric_array(1, "d", [[1.0, 2.0], [3.0, 4.0]])),
        "array-float": frame("array", numeric_array(2, "f", [[1.0], [2.0]])),
        "array-int32": frame("array", numeric_array(3, "i", [[1, 2, 3]])),
        "array-int16": frame("array", numeric_array(4, "h", [[1], [2], [3]])),
        "array-int64": frame("array", numeric_array(5, "q", [[1, 2]])),
        "array-bool": frame("array", numeric_array(6, "B", [[1, 0, 1]])),
        "array-string": frame("array", string_array([["a", "bc"], ["", "温"]])),
        "analog-filter": frame("analog-filter", analog_filter(2, channels=(1, 3), sources=(1,)), filter_id=1),
        "array-filter": frame("array-filter", array_filter(1, 5, 15, 5, 15), filter_id=2),
        "remove-filter": frame("remove-filter", b"", filter_id=1),
        "signal-filter": frame("signal-filter", signal_filter(1, decimate=10, lowpass_order=4, lowpass_cutoff=100.0)),
        "hello": frame("hello", hello("key", "client")),
        "welcome": frame("welcome", welcome(9, "pub", [(1, "USB-6009"), (2, "PCI-6024")])),
        "start": frame("start", b""),
        "stop": frame("stop", b""),
        "select-sources": frame("select-sources", select_sources([1, 2])),
        "gap": frame("gap", gap(3, 2)),
        "close": frame("close", close(0, "bye")),
        "credit": frame("credit", credit(64)),
        "properties": frame("properties", properties([("serial", "SN42")], [(1, [("gain", "2")])]), source_id=1),
    }
