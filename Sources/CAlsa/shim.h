#ifndef TRIBUTARY_CALSA_SHIM_H
#define TRIBUTARY_CALSA_SHIM_H
// libasound (Debian libasound2-dev): the PCM capture calls of `serve --alsa`. Only
// TributarySources' AlsaDevice.swift includes it; no public type exposes an ALSA type.
#include <alsa/asoundlib.h>
#endif
