"""An independent reader of the coded transform, written from docs/CAPTURE.md alone (§2–§4.1 for the
container, §5.1 for the transform): pure Python + numpy (+ zstandard for the record payloads).

    for fmt, samples, counts in chunk_streams(path): ...   # every numeric stream of every chunk
    decode_coded(stored, fmt) -> numpy array of the stream's samples

Used by test_coded_spec.py; slow (one Python step per symbol and per bit), meant for small captures.
"""
import struct

import numpy as np
import zstandard

FILE_MAGIC = b"\x89TCAP\r\n\x1a"
RECORD_SYNC = b"\x9eTREC\r\n\x1a"
CODED = 8
# §4.1 sample_format -> numpy dtype; §5.1 element_type of the same format.
DTYPES = {1: np.dtype("<f8"), 2: np.dtype("<f4"), 3: np.dtype("<i2"), 4: np.dtype("<i4")}
ELEMENT_TYPES = {1: 4, 2: 3, 3: 1, 4: 2}
MASK64 = (1 << 64) - 1


class Damage(Exception):
    """The bytes break a rule of CAPTURE.md."""


def _require(condition, what):
    if not condition:
        raise Damage(what)


def _signed64(u):
    u &= MASK64
    return u - (1 << 64) if u >> 63 else u


# ---------------------------------------------------------------- container (§2, §3, §4.1)

def chunk_streams(path):
    """Yields (sample_format, samples, stored_and_transforms) for every numeric stream of every chunk
    record, in file order; coded streams are decoded by decode_coded, others returned as stored."""
    with open(path, "rb") as f:
        data = f.read()
    _require(data[:8] == FILE_MAGIC, "not a capture")
    version, _flags, header_length = struct.unpack_from("<HHI", data, 8)
    _require(version in (1, 2, 3, 4), f"version {version}")
    offset = header_length
    while offset + 88 <= len(data):
        _require(data[offset:offset + 8] == RECORD_SYNC, f"no record at {offset}")
        record_type, codec = data[offset + 8], data[offset + 9]
        stored_length, content_length = struct.unpack_from("<II", data, offset + 64)
        payload = data[offset + 88:offset + 88 + stored_length]
        offset += 88 + (stored_length + 7) // 8 * 8
        if record_type == 4:  # footer: the trailer follows
            break
        if record_type != 1:
            continue
        content = zstandard.ZstdDecompressor().decompress(payload) if codec == 1 else payload
        _require(len(content) == content_length, "content length")
        yield from _body_streams(content, version)


def _body_streams(body, version):
    _frame_count, stream_count, _reserved, structure_length = struct.unpack_from("<IHHQ", body, 0)
    descriptors = [struct.unpack_from("<BBHIQQ", body, 16 + 24 * s) for s in range(stream_count)]
    position = 16 + 24 * stream_count + structure_length
    for fmt, transforms, _r1, _r2, sample_bytes, stored_bytes in descriptors:
        position = (position + 7) // 8 * 8
        stored = body[position:position + stored_bytes]
        position += stored_bytes
        if transforms == CODED:
            # §2: a reader decodes a coded stream of any version in a capture of any version.
            samples = decode_coded(stored, fmt)
            _require(samples.nbytes == sample_bytes, "sample_bytes")
            yield fmt, samples, transforms
        else:
            yield fmt, stored, transforms
    _require(position == len(body), "bytes after the last stream")


# ---------------------------------------------------------------- the coded transform (§5.1)

def decode_coded(stored, sample_format):
    """The samples of a coded stream, as a numpy array of the stream's format."""
    stored = bytes(stored)
    _require(len(stored) >= 16, "coded stream header")
    version, element_type, reserved, segments, n = struct.unpack_from("<BBHIQ", stored, 0)
    _require(version in (1, 2, 3, 4), f"coded stream version {version}")
    _require(element_type == ELEMENT_TYPES[sample_format] and reserved == 0, "element_type / reserved")
    lanes = 2 if version == 1 else 4
    dtype = DTYPES[sample_format]
    out = []
    p, done = 16, 0
    for _ in range(segments):
        m, mode, predictor, flags, reserved = struct.unpack_from("<IBBBB", stored, p)
        _require(1 <= m <= 65536 and m <= n - done and reserved == 0, "segment count")
        p += 8
        is_float = sample_format in (1, 2)
        _require(mode in ((1, 2) if is_float else (0,)), f"mode {mode}")
        _require(predictor <= 3 and flags <= 2 and (flags == 0 or mode == 1), "predictor / flags")
        if mode == 1:
            offset, gain = struct.unpack_from("<dd", stored, p)
            p += 16
        if predictor == 3:
            order, q = stored[p], stored[p + 1]
            _require(1 <= order <= 8 and 1 <= q <= 62, "linear predictor")
            coefficients = struct.unpack_from(f"<{order}q", stored, p + 2)
            p += 2 + 8 * order
        block = ((lambda b, q, k: decode_latent_block_v3(b, q, k, version)) if version >= 3
                 else (lambda b, q, k: decode_latent_block(b, q, k, lanes)))
        r, p = block(stored, p, m)
        adjustments = np.zeros(m, dtype=np.uint64)
        if flags == 1:
            a, p = block(stored, p, m)
            adjustments = np.array([x & MASK64 for x in a], dtype=np.uint64)
        elif flags == 2:
            (e,) = struct.unpack_from("<I", stored, p)
            _require(1 <= e <= m, "exception count")
            previous = -1
            for k in range(e):
                index, value = struct.unpack_from("<IQ", stored, p + 4 + 12 * k)
                _require(previous < index < m, "exception index")
                adjustments[index] = value
                previous = index
            p += 4 + 12 * e
        v = _integrate(r, predictor, coefficients if predictor == 3 else (), q if predictor == 3 else 0)
        out.append(_samples(v, mode, sample_format, adjustments, offset if mode == 1 else 0.0, gain if mode == 1 else 0.0))
        done += m
    _require(done == n and p == len(stored), "segments do not add up to the stream")
    return np.concatenate(out).astype(dtype) if out else np.zeros(0, dtype)


def _integrate(r, predictor, c, q):
    """Latents v (Python ints, wrapping 64-bit) from residuals r."""
    v = []
    if predictor == 0:
        return list(r)
    if predictor == 1:
        s = 0
        for x in r:
            s = _signed64(s + x)
            v.append(s)
        return v
    if predictor == 2:
        s = d = 0
        for x in r:
            d = _signed64(d + x)
            s = _signed64(s + d)
            v.append(s)
        return v
    half = 1 << (q - 1)
    for i, x in enumerate(r):
        total = half
        for j in range(min(len(c), i)):
            total = _signed64(total + _signed64(c[j] * v[i - 1 - j]))
        v.append(_signed64(x + (total >> q)))  # Python >> on a negative int is arithmetic
    return v


def _samples(v, mode, sample_format, adjustments, offset, gain):
    v = np.array(v, dtype=np.int64)
    if mode == 0:
        return v.astype(DTYPES[sample_format].newbyteorder("="))  # truncated to the integer width
    if mode == 1:
        y = np.float64(offset) + np.float64(gain) * v.astype(np.float64)  # one multiply, one add, no FMA
        if sample_format == 1:
            return (y.view(np.uint64) + adjustments).view(np.float64)  # uint64 addition wraps
        a32 = (adjustments & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return (y.astype(np.float32).view(np.uint32) + a32).view(np.float32)
    if sample_format == 1:
        b = np.where(v >= 0, v, v ^ np.int64(0x7FFF_FFFF_FFFF_FFFF))
        return b.view(np.float64)
    b = np.where(v >= 0, v, v ^ np.int64(0x7FFF_FFFF))
    return (b & np.int64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)


def _bits(field, start, k):
    """k bits of an LSB-first bit field from bit `start` (bit j is bit j mod 8 of byte j // 8)."""
    value = 0
    for b in range(k):
        j = start + b
        value |= ((field[j // 8] >> (j % 8)) & 1) << b
    return value


def block_arities(stored):
    """The symbol arities of a coded stream's latent blocks (header byte 11 in version 4; 1 before)."""
    sample_format = {4: 1, 3: 2, 1: 3, 2: 4}[stored[1]]
    found = set()
    original = decode_latent_block_v3

    def spy(data, p, m, version=3):
        found.add(data[p + 11] if version >= 4 else 1)
        return original(data, p, m, version)

    globals()["decode_latent_block_v3"] = spy
    try:
        decode_coded(stored, sample_format)
    finally:
        globals()["decode_latent_block_v3"] = original
    return found


RADIX = {1: 256, 2: 16, 3: 6}
MAX_BINS = {1: 255, 2: 15, 3: 5}


def decode_latent_block_v3(stored, p, m, version=3):
    """The m values of a latent block of stream version 3 or 4 at p, and the offset after it."""
    _require(p + 28 <= len(stored), "latent block header")
    base, s, w, bins, arity, t, z, e = struct.unpack_from("<QBBBBQII", stored, p)
    if version == 3:
        _require(arity == 0, "version 3: the high byte of bin_count")
        arity = 1
    _require(arity in (1, 2, 3), f"symbol arity {arity}")
    count = -(-m // arity)  # symbol bytes: P = ceil(m / k)
    _require(s <= 56 and w <= 64 and bins <= MAX_BINS[arity] and 1 <= z <= count and e <= m, "latent block header")
    p += 28
    _require(p + z <= len(stored), "symbols")
    if z == count:
        packed = stored[p:p + z]
    else:
        frame = stored[p:p + z]
        try:
            _require(zstandard.frame_content_size(frame) == count, "symbol frame size")
            packed = zstandard.ZstdDecompressor().decompress(frame)
        except zstandard.ZstdError as error:
            raise Damage(f"symbol frame: {error}")
        _require(len(packed) == count, "symbol frame content")
    # Value i's symbol is digit floor(i / P) of byte i mod P (radix 256, 16 or 6; the first digit
    # the least significant); digits of values >= m are 0; a radix-6 byte is below 216.
    radix = RADIX[arity]
    symbols = [0] * m
    for j, byte in enumerate(packed):
        _require(byte < radix ** arity, "symbol byte beyond the radix")
        for d in range(arity):
            digit = byte % radix
            byte //= radix
            i = d * count + j
            if i < m:
                symbols[i] = digit
            else:
                _require(digit == 0, "a digit past the block's end")
    p += z
    low_bytes = (m * s + 7) // 8
    high_width = max(0, w - s)
    high_bytes = (e * high_width + 7) // 8
    _require(p + low_bytes + high_bytes <= len(stored), "bit fields")
    low, high = stored[p:p + low_bytes], stored[p + low_bytes:p + low_bytes + high_bytes]
    values, k = [], 0
    for i, symbol in enumerate(symbols):
        lo = _bits(low, i * s, s)
        if symbol < bins:
            u = ((t + symbol) << s) | lo
        else:
            _require(symbol == bins and k < e, "symbol beyond the escape, or too many escapes")
            u = (_bits(high, k * high_width, high_width) << s) | lo
            k += 1
        values.append(_signed64(base + u))
    _require(k == e, "escape count")
    return values, p + low_bytes + high_bytes


def decode_latent_block(stored, p, m, lanes):
    """The m values (Python ints, signed 64-bit) of the latent block at p, and the offset after it."""
    base, shift, escape_width, bin_count, bin_start = struct.unpack_from("<QBBHQ", stored, p)
    _require(shift <= 63 and escape_width <= 64 and bin_count <= 255, "latent block header")
    p += 20
    frequencies = []
    for _ in range(bin_count + 1):
        value, k = 0, 0
        while True:
            _require(k < 14, "frequency longer than 2 bytes")
            b = stored[p]
            p += 1
            value |= (b & 0x7F) << k
            k += 7
            if b < 0x80:
                break
        frequencies.append(value)
    _require(sum(frequencies) == 4096, "frequencies do not sum to 4096")
    offset_bytes, rans_bytes = struct.unpack_from("<II", stored, p)
    p += 8
    header = 4 * (2 * lanes - 1)
    _require(rans_bytes >= header and rans_bytes % 2 == 0 and p + offset_bytes + rans_bytes <= len(stored), "rANS lengths")
    offset_bits = stored[p:p + offset_bytes]
    rans = stored[p + offset_bytes:p + offset_bytes + rans_bytes]
    end = p + offset_bytes + rans_bytes

    # Symbols: slot -> symbol, F_s.
    owner, cumulative = [], []
    for s, f in enumerate(frequencies):
        cumulative.append(len(owner))
        owner.extend([s] * f)
    states = list(struct.unpack_from(f"<{lanes}I", rans, 0))
    counts = list(struct.unpack_from(f"<{lanes - 1}I", rans, 4 * lanes))
    total_words = (rans_bytes - header) // 2
    _require(sum(counts) <= total_words, "word counts beyond the words")
    counts.append(total_words - sum(counts))
    words = struct.unpack_from(f"<{total_words}H", rans, header)
    streams, start = [], 0
    for c in counts:
        streams.append(words[start:start + c])
        start += c
    used = [0] * lanes
    symbols = []
    for i in range(m):
        j = i % lanes
        x = states[j]
        slot = x % 4096
        s = owner[slot]
        x = frequencies[s] * (x >> 12) + slot - cumulative[s]
        if x < 1 << 16:
            _require(used[j] < len(streams[j]), "a word stream ran out")
            x = (x << 16) | streams[j][used[j]]
            used[j] += 1
        states[j] = x
        symbols.append(s)
    _require(used == counts and all(x == 1 << 16 for x in states), "rANS streams not used up exactly")

    # Offset bits, LSB-first: vectorised (positions from the widths, 64-bit windows) where the
    # width is at most 56, bit by bit above.
    symbols = np.array(symbols, dtype=np.int64)
    widths = np.where(symbols < bin_count, shift, escape_width).astype(np.int64)
    positions = np.cumsum(widths) - widths
    _require(int(widths.sum()) <= 8 * offset_bytes, "offset bits run past offset_bytes")
    padded = np.frombuffer(offset_bits + bytes(16), dtype=np.uint8)
    index = positions >> 3
    window = np.zeros(m, dtype=np.uint64)
    for k in range(8):
        window |= padded[index + k].astype(np.uint64) << np.uint64(8 * k)
    narrow = np.minimum(widths, 56).astype(np.uint64)
    raw = (window >> (positions & 7).astype(np.uint64)) & ((np.uint64(1) << narrow) - np.uint64(1))
    values = []
    big = None
    for i in range(m):
        w = int(widths[i])
        if w <= 56:
            bits = int(raw[i])
        else:
            if big is None:
                big = int.from_bytes(offset_bits, "little")
            bits = (big >> int(positions[i])) & ((1 << w) - 1)
        s = int(symbols[i])
        value = base + ((bin_start + s) << shift) if s < bin_count else base
        values.append(_signed64(value + bits))
    return values, end
