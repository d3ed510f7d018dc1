#ifndef TRIBUTARY_CZSTD_SHIM_H
#define TRIBUTARY_CZSTD_SHIM_H
// zstd (Debian libzstd-dev).
#include <zstd.h>
#include <zstd_errors.h>
#endif
