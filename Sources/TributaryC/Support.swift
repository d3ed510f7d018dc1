import CTributary
import Foundation
import TributaryText
import TributaryWire

// The plumbing of the C interface (include/tributary.h): status codes, the per-thread error message,
// the handle table and C strings handed to the caller. Every exported function runs its body through
// `guarded`, so no Swift error crosses the boundary; arguments are validated before use, so nothing
// traps on a caller's mistake (a NULL pointer, an unknown or closed handle, an index out of range).

/// A status code of include/tributary.h (`TRIBUTARY_OK`, `TRIBUTARY_E_…`), taken from the header,
/// which declares and documents each once.
struct Status: Equatable, Sendable {
    let rawValue: Int32

    static let ok = Status(rawValue: TRIBUTARY_OK)
    static let argument = Status(rawValue: TRIBUTARY_E_ARGUMENT)
    static let handle = Status(rawValue: TRIBUTARY_E_HANDLE)
    static let range = Status(rawValue: TRIBUTARY_E_RANGE)
    static let io = Status(rawValue: TRIBUTARY_E_IO)
    static let format = Status(rawValue: TRIBUTARY_E_FORMAT)
    static let type = Status(rawValue: TRIBUTARY_E_TYPE)
    static let analysis = Status(rawValue: TRIBUTARY_E_ANALYSIS)
    static let timeout = Status(rawValue: TRIBUTARY_E_TIMEOUT)
    static let end = Status(rawValue: TRIBUTARY_E_END)
    static let scct = Status(rawValue: TRIBUTARY_E_SCCT)
    static let buffer = Status(rawValue: TRIBUTARY_E_BUFFER)
    static let dropped = Status(rawValue: TRIBUTARY_E_DROPPED)
    static let `internal` = Status(rawValue: TRIBUTARY_E_INTERNAL)
}

/// A failure of a C-interface call: its status and the message `tributary_last_error` returns.
struct APIError: Error {
    var status: Status
    var message: String
    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// The key of the per-thread last-error message (a malloc'd C string, freed when replaced or at thread exit).
private let lastErrorKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { free($0) }
    return key
}()

/// An empty message, returned before any call has failed on a thread.
nonisolated(unsafe) private let emptyMessage: UnsafeMutablePointer<CChar> = strdup("")!

func setLastError(_ message: String) {
    let old = pthread_getspecific(lastErrorKey)
    pthread_setspecific(lastErrorKey, strdup(message))
    free(old)
}

func lastErrorPointer() -> UnsafePointer<CChar> {
    if let p = pthread_getspecific(lastErrorKey) { return UnsafePointer(p.assumingMemoryBound(to: CChar.self)) }
    return UnsafePointer(emptyMessage)
}

/// Runs the body of an exported function: its status on success, else the error's status with the
/// message stored for `tributary_last_error`.
func guarded(_ function: String, _ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return Status.ok.rawValue
    } catch let error as APIError {
        setLastError("\(function): \(error.message)")
        return error.status.rawValue
    } catch {
        setLastError("\(function): \(error)")
        return Status.internal.rawValue
    }
}

/// A required C string argument as a Swift string.
func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(APIError) -> String {
    guard let pointer else { throw APIError(.argument, "\(name) is NULL") }
    return String(cString: pointer)
}

/// A required out-parameter.
func out<T>(_ pointer: UnsafeMutablePointer<T>?, _ name: String) throws(APIError) -> UnsafeMutablePointer<T> {
    guard let pointer else { throw APIError(.argument, "\(name) is NULL") }
    return pointer
}

/// A string the caller owns and frees with `tributary_free`.
func ownedCString(_ text: String) throws(APIError) -> UnsafeMutablePointer<CChar> {
    guard let p = strdup(text) else { throw APIError(.internal, "out of memory") }
    return p
}

/// Opaque handles: tokens that are never reused, looked up in a table on every call, so a closed or
/// made-up handle is reported (TRIBUTARY_E_HANDLE) instead of being dereferenced.
enum Handles {
    /// @unchecked Sendable: `objects` and `next` are only touched with `lock` held.
    private final class Table: @unchecked Sendable {
        let lock = NSLock()
        var next: UInt = 1
        var objects: [UInt: AnyObject] = [:]
    }

    private static let table = Table()

    private static func token(_ handle: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle))) >> 4 }

    static func insert(_ object: AnyObject) -> OpaquePointer {
        table.lock.lock()
        defer { table.lock.unlock() }
        let token = table.next
        table.next += 1
        table.objects[token] = object
        // Shifted so that the handle looks like an aligned pointer and is never NULL.
        return OpaquePointer(bitPattern: token << 4)!
    }

    static func lookup<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type, _ what: String) throws(APIError) -> T {
        guard let handle else { throw APIError(.handle, "the \(what) handle is NULL") }
        table.lock.lock()
        let object = table.objects[token(handle)]
        table.lock.unlock()
        guard let object else { throw APIError(.handle, "unknown or closed \(what) handle") }
        guard let typed = object as? T else { throw APIError(.handle, "the handle is not a \(what) handle") }
        return typed
    }

    /// Removes a handle from the table and returns its object (for its last rites).
    static func remove<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type, _ what: String) throws(APIError) -> T {
        let object = try lookup(handle, as: type, what)
        table.lock.lock()
        table.objects[token(handle!)] = nil
        table.lock.unlock()
        return object
    }
}

/// TributaryVersion.current as a C string that lives as long as the process.
nonisolated(unsafe) private let versionText: UnsafeMutablePointer<CChar> = strdup(TributaryVersion.current)!

/// The library's version (a static string): TributaryVersion.current, the version `tributary --version` prints.
@_cdecl("tributary_version")
public func tributary_version() -> UnsafePointer<CChar> { UnsafePointer(versionText) }

/// The C API's version: TRIBUTARY_API_VERSION of the header the library was built with.
@_cdecl("tributary_api_version")
public func tributary_api_version() -> Int32 { 1 }

/// The declared kinds' names as C strings that live as long as the process, indexed by kind number.
nonisolated(unsafe) private let kindNames: [UnsafeMutablePointer<CChar>?] = (0...255).map { number in
    FrameKind.name(ofNumber: UInt8(number)).map { strdup($0)! }
}

/// The name of a package kind ("analog", "analog-filter", "keepalive", …; static, never freed):
/// TributaryWire's `FrameKind` and `ExtensionKind`, the one vocabulary the header's TRIBUTARY_KIND_*
/// and Python follow. E_ARGUMENT for a number that is no declared kind, or a NULL `name`.
@_cdecl("tributary_kind_name")
public func tributary_kind_name(_ kind: Int32, _ name: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    guarded("tributary_kind_name") {
        let result = try out(name, "name")
        result.pointee = nil
        guard (0...255).contains(kind), let text = kindNames[Int(kind)] else {
            throw APIError(.argument, "kind \(kind) is no declared package kind (docs/PROTOCOL.md §2.2)")
        }
        result.pointee = UnsafePointer(text)
    }
}

/// Every declared kind with its traits, in number order: the vocabulary as `tributary_kinds_json` gives it.
private let kindsJSON: String = JSON.array(
    FrameKind.vocabulary.sorted { $0.number < $1.number }.map { entry in
        let kind = FrameKind(rawValue: entry.number)
        let sender: String =
            switch FrameKind.direction(ofNumber: entry.number) {
            case .publisherToSubscriber?: "publisher"
            case .subscriberToPublisher?: "subscriber"
            case .either?, nil: "either"
            }
        return .object([
            ("number", .uint(UInt64(entry.number))), ("name", .string(entry.name)), ("sender", .string(sender)),
            ("data", .bool(kind?.isData == true)), ("application", .bool(kind?.isApplicationPackage == true)),
            ("delivered", .bool(kind?.isDelivered == true)),
        ])
    }
).text

/// Every declared package kind and its traits as a JSON array (the caller frees it): TributaryWire's
/// `FrameKind` and `ExtensionKind`, so that the header's TRIBUTARY_KIND_*, Python and the command
/// line can be checked against the one declaration.
@_cdecl("tributary_kinds_json")
public func tributary_kinds_json(_ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    guarded("tributary_kinds_json") {
        let result = try out(json, "json")
        result.pointee = nil
        result.pointee = try ownedCString(kindsJSON)
    }
}

/// The message of the last failed call on the calling thread ("" if none); valid until the next
/// failing call on this thread. Never NULL.
@_cdecl("tributary_last_error")
public func tributary_last_error() -> UnsafePointer<CChar> { lastErrorPointer() }

/// Copies the last error message into a caller's buffer (for LabVIEW); returns its full length.
@_cdecl("tributary_last_error_copy")
public func tributary_last_error_copy(_ buffer: UnsafeMutablePointer<CChar>?, _ size: UInt) -> UInt {
    tributary_string_copy(lastErrorPointer(), buffer, size)
}

/// Frees a string or buffer the library allocated for the caller (NULL is allowed).
@_cdecl("tributary_free")
public func tributary_free(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

/// Copies a C string into a caller's buffer (for LabVIEW and MATLAB); returns its full length.
@_cdecl("tributary_string_copy")
public func tributary_string_copy(_ string: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: UInt) -> UInt {
    guard let string else {
        if let buffer, size > 0 { buffer[0] = 0 }
        return 0
    }
    let length = strlen(string)
    if let buffer, size > 0 {
        let n = min(Int(length), Int(clamping: size) - 1)
        memcpy(buffer, string, n)
        buffer[n] = 0
    }
    return UInt(length)
}
