import TributaryWire

extension SubjectEngine {
    /// Why the first open (an application waiting in `Subject.open`) cannot succeed, when a monitor
    /// event tells: a refused connection or a handshake that failed because CURVE is on one side
    /// only. Reconnection attempts keep retrying (a restarting publisher refuses for a while).
    func openingFailure(_ event: ZMQMonitorEvent) -> ErrorReport? {
        guard lifecycle.waiter != nil, let endpoint = parameters?.endpoint else { return nil }
        if event.event.contains(.connectRetried) {
            // libzmq does not say why the attempt failed; one probe does (nil: it listens now).
            guard let (host, port) = ConnectDiagnosis.tcpHostPort(endpoint),
                let failure = ConnectDiagnosis.connectionFailure(host: host, port: port)
            else { return nil }
            return ErrorReport(.destinationUnreachable, failure)
        }
        guard event.event.contains(.handshakeFailedProtocol) || event.event.contains(.handshakeFailedNoDetail) else { return nil }
        if event.event.contains(.handshakeFailedNoDetail) {
            // The connection closed mid-handshake: the next attempts (libzmq's back-off: 100, 200,
            // 400 ms on) may say more — the refusal of this subscriber's key (error 1) or the
            // mechanism mismatch. A publisher with more connections than `maxPendingPeers` also
            // closes new ones at once (a burst of subscribers): that passes within an attempt or two.
            handshakeFailuresWithoutDetail += 1
            if handshakeFailuresWithoutDetail < Self.handshakeFailuresBeforeDiagnosis { return nil }
            // A mechanism mismatch and a publisher that keeps closing new connections (over its
            // pending limit, on a loaded machine) look alike from here: the publisher's greeting
            // names its mechanism. Unknown (the probe was closed too) or no mismatch: keep trying
            // within the open's timeout.
            handshakeFailuresWithoutDetail = 0
            guard let (host, port) = ConnectDiagnosis.tcpHostPort(endpoint),
                let mechanism = ConnectDiagnosis.peerMechanism(host: host, port: port)
            else { return nil }
            let usesCurve = options.curve != nil
            if !usesCurve && mechanism == "NULL" { return nil }
            if mechanism == "NULL" && usesCurve {
                return ErrorReport(
                    .destinationUnreachable,
                    "the publisher at \(endpoint) does not use CURVE (handshake failed: security mechanism mismatch)")
            }
        }
        // A mechanism mismatch is reported as such only by the side that detects it; the other one
        // sees the connection closed during the handshake (no detail, EPIPE). Without CURVE, a
        // no-detail failure reaches here only when the publisher's greeting says CURVE.
        let mismatch = event.event.contains(.handshakeFailedProtocol) && event.value == ConnectDiagnosis.mechanismMismatch
        let message =
            switch (options.curve != nil, mismatch) {
            case (false, _): "the publisher at \(endpoint) requires CURVE (handshake failed): connect with its public key"
            case (true, true): "the publisher at \(endpoint) does not use CURVE (handshake failed: security mechanism mismatch)"
            case (true, false):
                "the CURVE handshake with \(endpoint) failed: the publisher does not use CURVE, or its public key "
                    + "is not the one given"
            }
        return ErrorReport(.destinationUnreachable, message)
    }
}
