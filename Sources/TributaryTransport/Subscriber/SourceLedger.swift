#if canImport(TributaryWire)
    import TributaryWire
#endif

/// What a subscriber keeps per publisher is bounded by the subscriber, not by the publisher: the
/// number of distinct source ids a session may use (each costs state in every consumer: a chunk
/// builder in a recording, a trace in the view) and the bytes of the configurations it keeps (the
/// latest of each source). docs/PROTOCOL.md §4.8.
struct SourceLedger {
    /// The most source ids a session may use (`SubjectOptions.maxSources`).
    let maxSources: Int
    /// The most bytes the latest configurations of all sources may take together
    /// (`SubjectOptions.maxConfigurationBytes`).
    let maxConfigurationBytes: Int
    private var configurationBytes: [UInt32: Int] = [:]
    private var totalConfigurationBytes = 0

    init(maxSources: Int, maxConfigurationBytes: Int) {
        self.maxSources = maxSources
        self.maxConfigurationBytes = maxConfigurationBytes
    }

    /// Forgets the sources of the previous session.
    mutating func reset() {
        configurationBytes.removeAll(keepingCapacity: true)
        totalConfigurationBytes = 0
    }

    /// Admits a frame of source `sourceID` (0, the publisher itself, is always admitted); a
    /// configuration frame also counts its length. - Returns: why the frame is refused, or nil.
    mutating func admit(sourceID: UInt32, configurationLength: Int?) -> String? {
        guard sourceID != 0 else { return nil }
        let known = configurationBytes[sourceID]
        if known == nil, configurationBytes.count >= maxSources {
            return "the publisher uses more than \(maxSources) source ids (source \(sourceID) is one too many)"
        }
        let old = known ?? 0
        let new = configurationLength ?? old
        let total = totalConfigurationBytes - old + new
        if total > maxConfigurationBytes {
            return
                "the publisher's configurations take \(total) bytes with source \(sourceID)'s, over the limit of \(maxConfigurationBytes)"
        }
        configurationBytes[sourceID] = new
        totalConfigurationBytes = total
        return nil
    }
}
