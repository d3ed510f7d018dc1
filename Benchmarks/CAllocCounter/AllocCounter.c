// Counts heap allocations by interposing the allocator entry points of the benchmark executable.
// The executable's definitions win over glibc's for every shared library (the Swift runtime included),
// and forward to glibc's internal entry points. Counts are stable where times are not, which is
// why the benchmark gates on them.
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include "CAllocCounter.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static uint64_t allocs;
static uint64_t frees;
/// The calling thread's share (initial-exec TLS: reading it allocates nothing, even on a new thread).
static __thread uint64_t thread_allocs __attribute__((tls_model("initial-exec")));

uint64_t tributary_alloc_count(void) { return __atomic_load_n(&allocs, __ATOMIC_RELAXED); }
uint64_t tributary_free_count(void) { return __atomic_load_n(&frees, __ATOMIC_RELAXED); }
uint64_t tributary_thread_alloc_count(void) { return thread_allocs; }

static inline void count_alloc(void) {
    __atomic_add_fetch(&allocs, 1, __ATOMIC_RELAXED);
    thread_allocs++;
}

void *malloc(size_t size) { count_alloc(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count_alloc(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count_alloc(); return __libc_realloc(p, size); }
void free(void *p) {
    if (p) __atomic_add_fetch(&frees, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
    count_alloc();
    void *p = __libc_memalign(alignment, size);
    if (!p && size) return ENOMEM;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t alignment, size_t size) { count_alloc(); return __libc_memalign(alignment, size); }
void *memalign(size_t alignment, size_t size) { count_alloc(); return __libc_memalign(alignment, size); }
