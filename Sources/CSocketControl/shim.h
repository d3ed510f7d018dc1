#ifndef TRIBUTARY_CSOCKETCONTROL_SHIM_H
#define TRIBUTARY_CSOCKETCONTROL_SHIM_H
// Two TCP socket controls the publisher applies to connections libzmq owns, which Swift's Glibc
// module does not offer: Linux's received-byte counter (TCP_INFO) and a socket filter that drops
// everything a peer still sends.
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/filter.h>

// <linux/tcp.h> cannot be included beside glibc's <netinet/tcp.h> (two different struct tcp_info),
// so the kernel's layout up to the counter is declared here under its own name: 8 one-byte fields,
// 24 u32 fields, then u64 pacing_rate, max_pacing_rate, bytes_acked and bytes_received (Linux 4.1+;
// the kernel only ever appends to this struct).
struct tributary_tcp_info_prefix {
    uint8_t flags_and_state[8];
    uint32_t times_and_metrics[24];
    uint64_t pacing_rate;
    uint64_t max_pacing_rate;
    uint64_t bytes_acked;
    uint64_t bytes_received;
};
_Static_assert(offsetof(struct tributary_tcp_info_prefix, bytes_received) == 128,
               "tcpi_bytes_received is at byte 128 of the kernel's struct tcp_info");

/// Bytes the kernel has received on the TCP connection `fd` (tcpi_bytes_received), or -1 when `fd`
/// is not a TCP socket or the kernel does not report the counter.
static inline int64_t tributary_tcp_bytes_received(int fd) {
    struct tributary_tcp_info_prefix info;
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, 11 /* TCP_INFO */, &info, &length) != 0) return -1;
    if (length < sizeof info) return -1;
    return (int64_t)info.bytes_received;
}

/// Makes the kernel drop every segment that arrives on `fd` from now on (a classic BPF socket
/// filter that accepts nothing; no privilege needed). `shutdown(2)` alone does not stop a peer that
/// keeps sending: Linux still queues its data, and whoever reads the socket keeps getting it.
/// Returns 0, or -1 with errno set.
static inline int tributary_drop_input(int fd) {
    struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
    struct sock_fprog program = { .len = 1, .filter = drop_all };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program);
}
#endif
