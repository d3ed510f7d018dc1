#ifndef TRIBUTARY_ALLOC_COUNTER_H
#define TRIBUTARY_ALLOC_COUNTER_H
#include <stdint.h>
/// Number of malloc/calloc/realloc/posix_memalign/aligned_alloc calls made by this process so far.
uint64_t tributary_alloc_count(void);
/// Number of free calls (with a non-NULL pointer) made by this process so far.
uint64_t tributary_free_count(void);
/// Number of allocation calls (as tributary_alloc_count) made by the calling thread so far.
uint64_t tributary_thread_alloc_count(void);
#endif
