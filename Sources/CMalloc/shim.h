#ifndef TRIBUTARY_CMALLOC_SHIM_H
#define TRIBUTARY_CMALLOC_SHIM_H
// glibc's allocator controls (mallopt), which Swift's Glibc module does not export.
#include <malloc.h>
#endif
