#ifndef TRIBUTARY_CFFTW_SHIM_H
#define TRIBUTARY_CFFTW_SHIM_H
// FFTW 3 (Debian libfftw3-dev): double (fftw_*) and single precision (fftwf_*) APIs.
#include <fftw3.h>
#endif
