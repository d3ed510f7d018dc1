/*
 * push_cpu.c — what a push costs a C publisher (issue 40, "C push"): run by Benchmarks/publish_bench.py,
 * which builds it against the release library and starts one `tributary subscribe --summary` on it.
 *
 *   gcc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude Benchmarks/c/push_cpu.c \
 *       -L.build/release -lTributaryC -Wl,-rpath,$PWD/.build/release -o push_cpu
 *   ./push_cpu CHANNELS SAMPLES BLOCKS RATE
 *
 * Binds tcp://127.0.0.1:0, prints "listening on ENDPOINT", adds source 1 (CHANNELS float64 channels of
 * SAMPLES samples a block; RATE 0: lossless, pushed as fast as the subscriber takes them; RATE > 0:
 * live, RATE blocks/s), waits for a subscriber, pushes BLOCKS / 4 blocks to warm up (the source's
 * buffer pool, libzmq's pipes), then BLOCKS blocks measured, and closes (the lossless frames drain).
 * Prints one JSON object:
 *   process_cpu_us: the process's CPU (every thread: the pushing one, the publisher's loop, libzmq's
 *                   I/O thread) per block, from before the first measured push to the closed publisher;
 *   push_cpu_us:    the pushing thread's CPU per push (tributary_source_push, copy included): unpaced,
 *                   the push loop's; paced, timed around each call (less what the timing adds);
 *   copy_us:        the same thread's CPU per memcpy of one block into one of 128 rotating buffers of
 *                   its size (what the push's one copy costs alone, cache effects alike);
 *   push_allocs:    heap allocations per push made by the pushing thread (malloc is interposed below).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tributary.h"

/* ---- allocation counting: this executable's allocator entry points win over glibc's ---- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static __thread uint64_t thread_allocs __attribute__((tls_model("initial-exec")));
void *malloc(size_t size) { thread_allocs++; return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { thread_allocs++; return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { thread_allocs++; return __libc_realloc(p, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    thread_allocs++;
    void *p = __libc_memalign(alignment, size);
    if (!p && size) return ENOMEM;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t alignment, size_t size) { thread_allocs++; return __libc_memalign(alignment, size); }
void *memalign(size_t alignment, size_t size) { thread_allocs++; return __libc_memalign(alignment, size); }

static double clock_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double process_cpu_s(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

static int fail(const char *what, int status) {
    fprintf(stderr, "push_cpu: %s: status %d: %s\n", what, status, tributary_last_error());
    return 1;
}

/* Pushes `count` blocks (live: paced at `rate` blocks/s from `start`); returns the blocks dropped, or -1.
 * Paced, *push_cpu_s receives the thread's CPU inside the push calls alone (the sleeps between them
 * excluded), timed around each call. */
static long push_blocks(tributary_source *source, const double *block, uint32_t channels, uint64_t samples, long count,
                        double rate, double start, double *push_cpu_s) {
    long dropped = 0;
    double inside = 0;
    for (long k = 0; k < count; k++) {
        double before = 0;
        if (rate > 0) {
            double due = start + (double)k / rate;
            struct timespec wake = {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
            before = clock_s(CLOCK_THREAD_CPUTIME_ID);
        }
        int status = tributary_source_push(source, block, TRIBUTARY_FLOAT64, channels, samples, TRIBUTARY_CHANNEL_MAJOR,
                                           TRIBUTARY_TIME_AUTO, 30.0);
        if (rate > 0) inside += clock_s(CLOCK_THREAD_CPUTIME_ID) - before;
        if (status == TRIBUTARY_E_DROPPED) {
            dropped++;
        } else if (status != TRIBUTARY_OK) {
            fail("tributary_source_push", status);
            return -1;
        }
    }
    if (push_cpu_s) *push_cpu_s = inside;
    return dropped;
}

/* The thread CPU seconds that one pair of CLOCK_THREAD_CPUTIME_ID readings adds (subtracted from a
 * paced run's timed calls). */
static double timing_pair_cost(void) {
    enum { PAIRS = 20000 };
    double sink = 0, start = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < PAIRS; i++) sink += clock_s(CLOCK_THREAD_CPUTIME_ID) - clock_s(CLOCK_THREAD_CPUTIME_ID);
    double per = (clock_s(CLOCK_THREAD_CPUTIME_ID) - start) / PAIRS;
    __asm__ volatile("" : : "r"(&sink) : "memory");
    return per;
}

/* The pushing thread's CPU seconds per memcpy of `bytes` into 128 rotating buffers. */
static double copy_cost(const double *block, size_t bytes, long count) {
    enum { BUFFERS = 128 };
    char *buffers = malloc(BUFFERS * bytes);
    if (!buffers) return -1;
    memset(buffers, 1, BUFFERS * bytes);
    double start = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (long k = 0; k < count; k++) {
        memcpy(buffers + (size_t)(k % BUFFERS) * bytes, block, bytes);
        __asm__ volatile("" : : "r"(buffers) : "memory");
    }
    double seconds = clock_s(CLOCK_THREAD_CPUTIME_ID) - start;
    free(buffers);
    return seconds / (double)count;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: push_cpu CHANNELS SAMPLES BLOCKS RATE\n");
        return 2;
    }
    long channels_arg = strtol(argv[1], NULL, 10), samples_arg = strtol(argv[2], NULL, 10), blocks = strtol(argv[3], NULL, 10);
    double rate = strtod(argv[4], NULL);
    if (channels_arg < 1 || channels_arg > 1024 || samples_arg < 1 || samples_arg > 65536 || blocks < 4 || blocks > 100000000 ||
        !(rate >= 0 && rate <= 1e6)) {
        fprintf(stderr, "push_cpu: CHANNELS 1-1024, SAMPLES 1-65536, BLOCKS 4-1e8, RATE 0-1e6 blocks/s\n");
        return 2;
    }
    uint32_t channels = (uint32_t)channels_arg;
    uint64_t samples = (uint64_t)samples_arg;
    size_t bytes = (size_t)channels * samples * sizeof(double);
    double *block = malloc(bytes);
    if (!block) return 1;
    for (size_t i = 0; i < (size_t)channels * samples; i++) block[i] = (double)(i % 1000) * 1e-3;

    tributary_publisher *publisher = NULL;
    char *endpoint = NULL;
    int status = tributary_publisher_open("tcp://127.0.0.1:0", "bench", "push_cpu", &publisher, &endpoint);
    if (status != TRIBUTARY_OK) return fail("tributary_publisher_open", status);
    tributary_publisher_discovery(publisher, 0, NULL, 0, -1);
    printf("listening on %s\n", endpoint);
    fflush(stdout);
    tributary_free(endpoint);
    tributary_source *source = NULL;
    status = tributary_source_add(publisher, 1, "push_cpu", rate > 0 ? rate * (double)samples : 1e6, channels, NULL, "V",
                                  TRIBUTARY_FLOAT64, 1, 0, -10, 10, rate > 0 ? 0 : 1, &source);
    if (status != TRIBUTARY_OK) return fail("tributary_source_add", status);
    int subscribers = 0;
    for (int i = 0; i < 3000 && subscribers < 1; i++) {
        tributary_publisher_subscribers(publisher, &subscribers);
        usleep(10000);
    }
    if (subscribers < 1) {
        fprintf(stderr, "push_cpu: no subscriber within 30 s\n");
        return 1;
    }
    long warm = blocks / 4;
    if (push_blocks(source, block, channels, samples, warm, rate, clock_s(CLOCK_MONOTONIC), NULL) < 0) return 1;
    usleep(200000);

    double wall0 = clock_s(CLOCK_MONOTONIC), cpu0 = process_cpu_s(), thread0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    uint64_t allocs0 = thread_allocs;
    double paced_push_s = 0;
    long dropped = push_blocks(source, block, channels, samples, blocks, rate, wall0, &paced_push_s);
    if (dropped < 0) return 1;
    uint64_t allocs1 = thread_allocs;
    double thread1 = clock_s(CLOCK_THREAD_CPUTIME_ID), pushed_wall = clock_s(CLOCK_MONOTONIC) - wall0;
    double push_s = rate > 0 ? paced_push_s - (double)blocks * timing_pair_cost() : thread1 - thread0;
    tributary_source_close(source);
    status = tributary_publisher_close(publisher);
    if (status != TRIBUTARY_OK) return fail("tributary_publisher_close", status);
    double cpu1 = process_cpu_s(), wall1 = clock_s(CLOCK_MONOTONIC);
    double copy = copy_cost(block, bytes, blocks < 20000 ? blocks : 20000);
    printf("{\"channels\": %u, \"samples\": %llu, \"blocks\": %ld, \"rate\": %g, \"dropped\": %ld, "
           "\"process_cpu_us\": %.4f, \"push_cpu_us\": %.4f, \"copy_us\": %.4f, \"push_allocs\": %.4f, "
           "\"push_seconds\": %.4f, \"seconds\": %.4f}\n",
           channels, (unsigned long long)samples, blocks, rate, dropped, (cpu1 - cpu0) / (double)blocks * 1e6,
           push_s / (double)blocks * 1e6, copy * 1e6, (double)(allocs1 - allocs0) / (double)blocks, pushed_wall,
           wall1 - wall0);
    free(block);
    return 0;
}
