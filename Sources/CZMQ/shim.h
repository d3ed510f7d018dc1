#ifndef TRIBUTARY_CZMQ_SHIM_H
#define TRIBUTARY_CZMQ_SHIM_H
// libzmq 4.3 (Debian libzmq3-dev), stable API only (Debian builds without the draft API).
#include <zmq.h>
// eventfd(2): the wake-up descriptor of TributaryTransport's ZMQLoop, polled by zmq_poll as a raw fd.
// Swift's Glibc module does not export <sys/eventfd.h>.
#include <sys/eventfd.h>
#endif
