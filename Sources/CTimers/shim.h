#ifndef TRIBUTARY_CTIMERS_SHIM_H
#define TRIBUTARY_CTIMERS_SHIM_H
// Linux's timer controls that Swift's Glibc module does not offer: timerfd (the publisher loop's
// precise wake-up, polled beside its sockets) and the per-thread timer slack (prctl, which Swift
// cannot call: it is variadic). The kernel lets a sleeping thread's timer fire up to its slack late,
// to batch wake-ups; the default is 50 µs, which a source pacing frames at their acquisition times
// adds to every frame's latency.
#include <sys/prctl.h>
#include <sys/timerfd.h>

/// Sets the calling thread's timer slack to `nanoseconds` (at least 1; 0 would restore the
/// default). Returns 0, or -1 with errno set.
static inline int tributary_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0UL, 0UL, 0UL);
}

/// The calling thread's timer slack in nanoseconds, or -1 with errno set.
static inline long tributary_timer_slack(void) {
    return (long)prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
}
#endif
