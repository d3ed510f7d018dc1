#ifndef TRIBUTARY_CISAL_SHIM_H
#define TRIBUTARY_CISAL_SHIM_H
// Intel ISA-L (Debian libisal-dev): crc32_iscsi, the CRC-32C of capture records, with the
// instruction set (SSE4.2 crc32, PCLMULQDQ folding, AVX-512) chosen at run time.
#include <isa-l/crc.h>
#endif
