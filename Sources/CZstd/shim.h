#ifndef TRIBUTARY_CZSTD_SHIM_H
#define TRIBUTARY_CZSTD_SHIM_H
// zstd (Debian libzstd-dev).
#include <zstd.h>
#include <zstd_errors.h>

/// Turns the Huffman coding of literals off (1) or leaves it to zstd (0) in a compression context:
/// ZSTD_c_literalCompressionMode = ZSTD_ps_disable, an "experimental" parameter of zstd.h (present
/// since zstd 1.4.5; its number is stable through 1.5.x). Literals are then stored raw: for
/// bit-shuffled samples whose low bit rows are noise, Huffman-coding them gains next to nothing and
/// at level 1 costs up to half of the compression time (docs/PERFORMANCE.md, twenty-first round).
/// zstd 1.5 already stores them raw at negative levels by default. Returns zstd's result: an error
/// code when this library does not know the parameter.
static inline size_t tributary_zstd_set_raw_literals(ZSTD_CCtx *context, int raw) {
    // ZSTD_c_literalCompressionMode is ZSTD_c_experimentalParam5; ZSTD_ps_auto = 0, ZSTD_ps_disable = 2.
    return ZSTD_CCtx_setParameter(context, ZSTD_c_experimentalParam5, raw ? 2 : 0);
}
#endif
