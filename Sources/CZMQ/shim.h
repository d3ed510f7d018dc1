#ifndef TRIBUTARY_CZMQ_SHIM_H
#define TRIBUTARY_CZMQ_SHIM_H
// libzmq 4.3 (Debian libzmq3-dev), stable API only (Debian builds without the draft API).
#include <zmq.h>
#endif
