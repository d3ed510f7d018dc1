/*
 * wake_cost.c — what waking a sleeping thread costs the waker (issue 40, "C push"): the floor under a
 * paced push, which must wake the publisher's loop for its block to go out at once.
 *
 *   gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread Benchmarks/c/wake_cost.c -o wake_cost && ./wake_cost
 *
 * A thread sleeps in poll(2) on an eventfd; the main thread, paced at 1 000 calls/s (clock_nanosleep
 * between calls, as a paced push), writes the eventfd, and measures its own CPU time around the write
 * (CLOCK_THREAD_CPUTIME_ID, less what a pair of readings costs); then the same with no write. Also
 * the cost of two system calls libzmq makes for every ZMQ_EVENTS read of a socket (getpid, poll).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int efd;

static double now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *sleeper(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p = {efd, POLLIN, 0};
        poll(&p, 1, -1);
        uint64_t value;
        if (read(efd, &value, sizeof value) < 0) return NULL;
    }
}

/* The waker's CPU µs per paced call, writing the eventfd (`wake`) or not. */
static double paced(int wake, int calls) {
    double inside = 0, pair = 0, start = now(CLOCK_MONOTONIC);
    for (int k = 0; k < calls; k++) {
        double due = start + (k + 1) * 1e-3;
        struct timespec at = {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        double a = now(CLOCK_THREAD_CPUTIME_ID);
        if (wake) {
            uint64_t one = 1;
            if (write(efd, &one, sizeof one) < 0) return -1;
        }
        double b = now(CLOCK_THREAD_CPUTIME_ID), c = now(CLOCK_THREAD_CPUTIME_ID);
        inside += b - a;
        pair += c - b;
    }
    return (inside - pair) / calls * 1e6;
}

int main(void) {
    efd = eventfd(0, EFD_NONBLOCK);
    if (efd < 0) return 1;
    pthread_t thread;
    if (pthread_create(&thread, NULL, sleeper, NULL) != 0) return 1;
    for (int round = 0; round < 2; round++) {
        printf("paced, waking a sleeping thread (eventfd write): %.2f us of the waker's CPU\n", paced(1, 2000));
        printf("paced, waking nobody:                            %.2f us\n", paced(0, 2000));
    }
    enum { CALLS = 200000 };
    struct pollfd p = {efd, POLLIN, 0};
    double best_getpid = 1, best_poll = 1;
    for (int round = 0; round < 5; round++) {
        double a = now(CLOCK_MONOTONIC);
        for (int i = 0; i < CALLS; i++) syscall(SYS_getpid);
        double b = now(CLOCK_MONOTONIC);
        for (int i = 0; i < CALLS; i++) poll(&p, 1, 0);
        double c = now(CLOCK_MONOTONIC);
        if ((b - a) / CALLS < best_getpid) best_getpid = (b - a) / CALLS;
        if ((c - b) / CALLS < best_poll) best_poll = (c - b) / CALLS;
    }
    printf("getpid %.2f us, poll of one descriptor without waiting %.2f us (best of 5 x %d)\n", best_getpid * 1e6,
           best_poll * 1e6, CALLS);
    return 0;
}
