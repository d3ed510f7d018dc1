import Glibc

/// The sockets of CivetWeb's connections, which CivetWeb 1.15's API does not hand out, and the way
/// the view ends a connection under CivetWeb's feet.
///
/// Two things need the sockets themselves: closing the connections of an address over its limit
/// before CivetWeb waits for their request heads (CivetWeb has no callback that can refuse a
/// connection, and `init_connection` cannot even see its address), and reading WebSocket frames by
/// their header (CivetWeb reads a whole frame, up to the 2 GiB its header may announce, into memory
/// before any callback sees it). The sockets are found among this process's descriptors by their
/// two ends. A descriptor is only cut while CivetWeb cannot close it: on the connection's own worker
/// thread, or under the lock that CivetWeb's `connection_close` callback waits for.
enum ConnectionSocket {
    /// An accepted TCP connection to the server's port.
    struct Accepted {
        var fd: Int32
        /// The local IPv4 address it reached (network byte order).
        var local: UInt32
        /// The peer's IPv4 address (network byte order) and port.
        var address: UInt32
        var port: UInt16
    }

    /// The TCP connections accepted on local port `localPort` (the listening socket has no peer), of
    /// local address `localAddress` unless it is 0.0.0.0.
    static func accepted(onPort localPort: Int, address localAddress: String = "0.0.0.0") -> [Accepted] {
        var bound = in_addr()
        guard inet_pton(AF_INET, localAddress, &bound) == 1 else { return [] }
        guard let local = UInt16(exactly: localPort), let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var found: [Accepted] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name), fd != own,
                let mine = address(of: fd, getsockname), UInt16(bigEndian: mine.sin_port) == local,
                bound.s_addr == 0 || mine.sin_addr.s_addr == bound.s_addr,
                let peer = address(of: fd, getpeername)
            else { continue }
            found.append(
                Accepted(fd: fd, local: mine.sin_addr.s_addr, address: peer.sin_addr.s_addr, port: UInt16(bigEndian: peer.sin_port)))
        }
        return found
    }

    /// The descriptor of the TCP connection from `remoteAddress:remotePort` to local port `localPort`.
    static func find(remoteAddress: String, remotePort: Int32, localPort: Int32) -> Int32? {
        var wanted = in_addr()
        guard inet_pton(AF_INET, remoteAddress, &wanted) == 1, let port = UInt16(exactly: remotePort),
            let local = Int(exactly: localPort)
        else { return nil }
        return accepted(onPort: local).first { $0.address == wanted.s_addr && $0.port == port }?.fd
    }

    /// Whether `fd` is still the connection `connection` (checked again just before it is cut).
    static func isStill(_ connection: Accepted, onPort localPort: Int) -> Bool {
        guard let mine = address(of: connection.fd, getsockname), Int(UInt16(bigEndian: mine.sin_port)) == localPort,
            let peer = address(of: connection.fd, getpeername)
        else { return false }
        return mine.sin_addr.s_addr == connection.local && peer.sin_addr.s_addr == connection.address
            && UInt16(bigEndian: peer.sin_port) == connection.port
    }

    /// An IPv4 address in dotted form.
    static func dotted(_ address: UInt32) -> String {
        let b = withUnsafeBytes(of: address) { Array($0) }  // network byte order: first octet first
        return b.map(String.init).joined(separator: ".")
    }

    private static func address(of fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32)
        -> sockaddr_in?
    {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return address
    }

    /// Writes what it can of `bytes` without waiting (the socket is non-blocking).
    static func sendNow(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
    }

    /// Ends the connection now: shut down (which wakes a worker waiting on it), then its descriptor
    /// number pointed at /dev/null in one step (`dup2`, so the number is never free for another
    /// thread to take): CivetWeb's next read on the number fails at once (not a socket), and
    /// CivetWeb's own close closes the /dev/null descriptor. What the peer sent and nobody read is
    /// discarded first (up to 64 KiB), so that a response just written leaves with a FIN rather
    /// than a reset where possible.
    static func cut(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 16_384)
        for _ in 0..<4 {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
        }
        shutdown(fd, Int32(SHUT_RDWR))
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else { return }
        _ = dup2(null, fd)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        close(null)
    }
}
