// The order-8 linear predictor's inverse for four channels at once (docs/CAPTURE.md §5.1), in AVX2,
// or eight at once in AVX-512 (linear_predictor.c). Swift on Linux compiles for the baseline x86-64,
// so these kernels live in C with a per-function target, and the decoder calls each only where its
// `_available()` function says the processor runs it.
#ifndef TRIBUTARY_LINEAR_PREDICTOR_H
#define TRIBUTARY_LINEAR_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// Whether this processor (and its operating system) runs AVX2 (always false off x86-64).
bool tributary_linear8_x4_available(void);

/// Undoes the order-8 predictor of four channels of `n` samples each: xk[i] from the residuals
/// vk[i], the coefficients c[8k ... 8k+7] and the shift q[k] (1 ... 62) of lane k. Returns how
/// many samples of every lane are final: `n`, or the start of the first 64-sample block in which
/// a latent left [-2^31, 2^31) (0 when a coefficient is outside it); the caller redoes the lanes.
size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q);

/// The kinds of samples `tributary_linear8_samples_x4` writes, each as `NumericCodec` converts a
/// latent x of a segment to its element type (docs/CAPTURE.md §5.1, "samples from latents"):
enum {
    /// binary64 grid: the bits of offset + gain × (double)x, the product and the sum each rounded
    /// (never fused), as `tributary_grid64`; 8 bytes an element.
    TRIBUTARY_SAMPLES_GRID64 = 1,
    /// binary32 grid: the binary64 value of the grid rounded to binary32, as `tributary_grid32`; 4 bytes.
    TRIBUTARY_SAMPLES_GRID32 = 2,
    /// int32: the latent's low 32 bits, as `tributary_narrow32`; 4 bytes.
    TRIBUTARY_SAMPLES_INT32 = 3,
    /// int16: the latent's low 16 bits, as `tributary_narrow16`; 2 bytes.
    TRIBUTARY_SAMPLES_INT16 = 4,
};

/// The order-8 predictor's inverse of four lanes as `tributary_linear8_x4` (v[k], c[8k ... 8k+7],
/// q[k]), each latent converted in the same pass to a sample of `kind` (above) at out[k][i], with
/// the grid offset[k], gain[k] for the grid kinds (unread for the integer kinds: may be NULL).
/// Returns n, or less — 0 without AVX2 and FMA, or for an unknown kind — when the lanes are
/// outside what its binary64 arithmetic computes exactly (coefficients, shifts, or latents too
/// large): nothing written is then to be used, and the caller undoes the lanes with
/// `tributary_linear8_x4` and converts them itself.
size_t tributary_linear8_samples_x4(const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,
                                    int kind, const double *offset, const double *gain);

/// Whether this processor (and its operating system) runs AVX-512F (always false off x86-64).
bool tributary_linear8_x8_available(void);

/// `tributary_linear8_x4` for eight channels: lane k reads v[k], writes x[k], and takes the
/// coefficients c[8k ... 8k+7] and the shift q[k]. Same contract and return value.
size_t tributary_linear8_x8(const int64_t *const v[8], int64_t *const x[8], size_t n, const int64_t *c, const int64_t *q);

#endif
