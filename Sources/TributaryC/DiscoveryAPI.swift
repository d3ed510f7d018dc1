import TributaryText
import TributaryTransport

/// Asks the publishers on the local network (discovery, docs/PROTOCOL.md §9) and gives the JSON array
/// `tributary resolve --json` prints.
@_cdecl("tributary_resolve")
public func tributary_resolve(
    _ query: UnsafePointer<CChar>?, _ timeoutSeconds: Double,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    guarded("tributary_resolve") {
        let result = try out(json, "json")
        result.pointee = nil
        guard timeoutSeconds.isFinite, timeoutSeconds >= 0.05, timeoutSeconds <= 3_600 else {
            throw APIError(.range, "timeout_seconds \(timeoutSeconds) is not in [0.05, 3600]")
        }
        var match: DiscoveryMatch?
        if let query, query.pointee != 0 {
            do { match = try DiscoveryMatch(try string(query, "query")) } catch let error as DiscoveryFormatError {
                throw APIError(.argument, "query: \(error)")
            }
        }
        let found: DiscoveryResult
        do { found = try DiscoveryResolver.resolve(match, timeout: timeoutSeconds) } catch {
            throw APIError(.io, "cannot resolve: \(error)")
        }
        result.pointee = try ownedCString(JSON.array(found.publishers.map(\.json)).text)
    }
}
