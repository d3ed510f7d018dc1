// Bit patterns of floating-point values (internal to the kernels).
#ifndef TRIBUTARY_KERNELS_BITS_H
#define TRIBUTARY_KERNELS_BITS_H
#include <stdint.h>
#include <string.h>

static inline uint64_t bits64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double double64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

#endif
