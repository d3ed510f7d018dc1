#ifndef TRIBUTARY_CCIVETWEB_SHIM_H
#define TRIBUTARY_CCIVETWEB_SHIM_H
// CivetWeb 1.15 (Debian libcivetweb-dev), built with WebSocket support (mg_check_feature(16)):
// the HTTP and WebSocket server of `tributary view` and `serve --http` (TributaryView/HTTPServer.swift).
#include <civetweb.h>
#endif
