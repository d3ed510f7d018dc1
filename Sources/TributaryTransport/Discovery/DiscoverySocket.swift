import Foundation

/// Where discovery happens: the multicast group, its UDP port and the queries' TTL (docs/PROTOCOL.md §9).
public struct DiscoverySettings: Sendable, Hashable {
    /// The default group, in the administratively scoped range 239.255.0.0/16 (site-local, RFC 2365).
    public static let defaultGroup = "239.255.84.82"
    public static let defaultPort = 16_580
    /// Queries reach the local network only (routers do not forward them).
    public static let defaultTTL = 1

    /// An IPv4 multicast address (224.0.0.0/4), dotted.
    public var group: String
    /// The UDP port publishers listen on, 1...65535.
    public var port: Int
    /// The multicast TTL of queries, 0...255 (0: this host only).
    public var ttl: Int

    /// Checks the group (an IPv4 multicast address), the port (1...65535) and the TTL (0...255).
    public init(group: String = defaultGroup, port: Int = defaultPort, ttl: Int = defaultTTL) throws(DiscoveryFormatError) {
        guard let address = DiscoverySocket.ipv4(group), (address.s_addr.bigEndian >> 28) == 0xE else {
            throw DiscoveryFormatError("the group '\(group)' is not an IPv4 multicast address (224.0.0.0 to 239.255.255.255)")
        }
        guard (1...65_535).contains(port) else { throw DiscoveryFormatError("the port \(port) is not in 1...65535") }
        guard (0...255).contains(ttl) else { throw DiscoveryFormatError("the TTL \(ttl) is not in 0...255") }
        self.group = group
        self.port = port
        self.ttl = ttl
    }

    /// The defaults (valid by construction).
    public static let standard = try! DiscoverySettings()
}

/// A discovery socket could not be made, bound or joined to the group.
public struct DiscoverySocketError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ operation: String, _ code: Int32) { message = "\(operation): \(String(cString: strerror(code)))" }
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A UDP socket (IPv4) for discovery, and the interfaces multicast can use.
final class DiscoverySocket: Sendable {
    let fd: Int32

    struct Interface: Hashable {
        var name: String
        var index: Int32
        var address: in_addr_t
        var isLoopback: Bool
    }

    init() throws(DiscoverySocketError) {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DiscoverySocketError("socket", errno) }
    }

    deinit { close(fd) }

    static func ipv4(_ text: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1 ? address : nil
    }

    static func dotted(_ address: in_addr) -> String {
        var copy = address
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func set(_ level: Int32, _ option: Int32, _ value: Int32) throws(DiscoverySocketError) {
        var v = value
        guard setsockopt(fd, level, option, &v, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw DiscoverySocketError("setsockopt \(option)", errno)
        }
    }

    func bind(address: in_addr, port: Int) throws(DiscoverySocketError) {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = UInt16(port).bigEndian
        sa.sin_addr = address
        let status = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else { throw DiscoverySocketError("bind to \(Self.dotted(address)):\(port)", errno) }
    }

    /// Joins `group` on `interface`; false when the kernel refuses (the interface went, or was joined before).
    func join(_ group: in_addr, on interface: Interface) -> Bool {
        var request = ip_mreqn(imr_multiaddr: group, imr_address: in_addr(s_addr: interface.address), imr_ifindex: interface.index)
        return setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreqn>.size)) == 0
    }

    /// Makes `interface` the one multicast datagrams leave by.
    func sendMulticast(via interface: Interface) -> Bool {
        var request = ip_mreqn(imr_multiaddr: in_addr(), imr_address: in_addr(s_addr: interface.address), imr_ifindex: interface.index)
        return setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &request, socklen_t(MemoryLayout<ip_mreqn>.size)) == 0
    }

    func send(_ bytes: [UInt8], to address: in_addr, port: Int) -> Bool {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = UInt16(port).bigEndian
        sa.sin_addr = address
        return send(bytes, to: sa)
    }

    func send(_ bytes: [UInt8], to destination: sockaddr_in) -> Bool {
        var sa = destination
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count
    }

    /// Waits at most `milliseconds` for a datagram; returns it (nil on timeout) and its sender. A
    /// datagram longer than `limit` bytes comes back as `limit + 1` bytes (refused by the parsers).
    func receive(limit: Int, milliseconds: Int32) -> (bytes: [UInt8], from: sockaddr_in)? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, max(0, milliseconds)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, raw.baseAddress, limit + 1, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC), $0, &length)
                }
            }
        }
        guard n >= 0 else { return nil }
        return (Array(buffer.prefix(min(n, limit + 1))), from)
    }

    /// The interfaces that are up and can carry multicast, with an IPv4 address.
    static func multicastInterfaces() -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var result: [Interface] = []
        var entry = list
        while let e = entry {
            defer { entry = e.pointee.ifa_next }
            let flags = e.pointee.ifa_flags
            guard let address = e.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                flags & UInt32(IFF_UP) != 0, flags & UInt32(IFF_MULTICAST) != 0
            else { continue }
            let name = String(cString: e.pointee.ifa_name)
            let inet = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            let interface = Interface(
                name: name, index: Int32(bitPattern: if_nametoindex(name)), address: inet,
                isLoopback: flags & UInt32(IFF_LOOPBACK) != 0)
            if !result.contains(where: { $0.index == interface.index }) { result.append(interface) }
        }
        return result
    }

    /// Every IPv4 address of this host's interfaces (network byte order).
    static func ownAddresses() -> Set<in_addr_t> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var result = Set<in_addr_t>()
        var entry = list
        while let e = entry {
            defer { entry = e.pointee.ifa_next }
            guard let address = e.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            result.insert(address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr })
        }
        return result
    }

    /// Whether `address` is in 127.0.0.0/8.
    static func isLoopback(_ address: in_addr) -> Bool { address.s_addr.bigEndian >> 24 == 127 }
}
