import Dispatch
import Foundation
import Synchronization
import TributarySources
import TributaryText
import TributaryTransport

/// `tributary serve` while it publishes: every 200 ms (or at once on a signal) it reports subscribers
/// coming and going, greets started subscribers with the command line's packages, repeats them with
/// --every, prints the list on SIGUSR1 or --status-interval, says when a simulated device falls behind
/// real time, and ends on SIGINT/SIGTERM or once every source that ends (replays, the pipe, sound cards) has been
/// delivered and --linger has passed.
struct ServeLoop {
    let options: ServeOptions
    let sources: ServeSources
    let publisher: Publisher
    let inbox: PublisherInbox

    /// How the loop ended: the reason given to subscribers, and whether everything was delivered
    /// (the publisher then gives subscribers time to read what is queued for them).
    struct End {
        var reason: String
        var delivered: Bool
    }

    private enum Event {
        case stop(Int32)
        case list
    }

    private var known: [UInt64: SubscriberInfo] = [:]
    /// Subscribers that have been sent the packages of the command line.
    private var greeted = Set<UInt64>()
    private var sessionsOpened: UInt64 = 0
    private var lastRepeat = Date()
    private var lastStatus = Date()
    private var deliveredAt: Date?
    /// Simulated sources said to be behind real time.
    private var behind: Set<UInt32> = []

    init(options: ServeOptions, sources: ServeSources, publisher: Publisher, inbox: PublisherInbox) {
        self.options = options
        self.sources = sources
        self.publisher = publisher
        self.inbox = inbox
    }

    mutating func run() -> End {
        let events = Mutex<[Event]>([])
        let wake = DispatchSemaphore(value: 0)
        let signals = ProcessSignals([SIGINT, SIGTERM, SIGUSR1]) { number in
            events.withLock { $0.append(number == SIGUSR1 ? .list : .stop(number)) }
            wake.signal()
        }
        defer { withExtendedLifetime(signals) {} }
        while true {
            _ = wake.wait(timeout: .now() + .milliseconds(200))
            reportSimulationLag()
            for event in events.withLock({ e -> [Event] in
                defer { e.removeAll() }; return e
            }) {
                switch event {
                case .stop(let number):
                    return End(reason: number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", delivered: false)
                case .list:
                    Self.printList(publisher.subscribers())
                }
            }
            let current = publisher.subscribers()
            followSubscribers(current)
            greet(current)
            if let interval = options.statusInterval, Date().timeIntervalSince(lastStatus) >= interval {
                lastStatus = Date()
                Self.printList(current)
            }
            if let end = endOfSources() { return end }
        }
    }

    /// A simulated device faster than this machine can compute falls behind real time: say so (once
    /// it is a second late, and again once it has caught up).
    private mutating func reportSimulationLag() {
        for device in sources.simulated {
            let late = device.secondsBehind, id = device.info.id
            if late >= 1, !behind.contains(id) {
                behind.insert(id)
                printError(
                    "source \(id) '\(device.info.description.terminalSafe)': the simulation is \(String(format: "%.1f", late)) s behind real time: "
                        + "this machine computes its \(counted(device.spec.channels, "channel")) × \(String(format: "%.0f", device.spec.rate)) samples/s more slowly than real time, "
                        + "so its frames (stamped on the device's schedule) fall ever further behind the clock; lower its rate or channels")
            } else if late == 0, behind.contains(id) {
                behind.remove(id)
                printError("source \(id) '\(device.info.description.terminalSafe)': the simulation has caught up with real time")
            }
        }
    }

    /// Subscribers coming and going.
    private mutating func followSubscribers(_ current: [SubscriberInfo]) {
        let ids = Set(current.map(\.sessionID))
        for info in current where known[info.sessionID] == nil {
            StandardOutput.line(
                "subscriber + session \(info.sessionID) '\(info.description.terminalSafe)' from \(info.address.terminalSafe)"
                    + (info.userID.map { " (CURVE \($0.terminalSafe))" } ?? ""))
        }
        // What the publisher held for a session that went (even one that came and went between two
        // looks) is freed: the inbox gives the heap's free pages back once things are quiet.
        let opened = publisher.statistics().sessionsOpened
        if opened != sessionsOpened || known.keys.contains(where: { !ids.contains($0) }) { inbox.sessionsChanged() }
        sessionsOpened = opened
        for (id, info) in known where !ids.contains(id) {
            StandardOutput.line(
                "subscriber - session \(id) '\(info.description.terminalSafe)': \(counted(info.framesSent, "frame")) sent, \(info.framesDropped) dropped"
            )
        }
        known = Dictionary(uniqueKeysWithValues: current.map { ($0.sessionID, $0) })
        greeted.formIntersection(ids)
    }

    /// The command line's packages: to each subscriber as it starts, and with --every to all again.
    private mutating func greet(_ current: [SubscriberInfo]) {
        let packages = options.packages
        guard !packages.isEmpty else { return }
        for info in current where info.isStarted && !greeted.contains(info.sessionID) {
            greeted.insert(info.sessionID)
            let sent = packages.filter { $0.publish(on: publisher, to: .session(info.sessionID)) }.count
            StandardOutput.line("sent \(sent) of \(counted(packages.count, "package")) to session \(info.sessionID)")
        }
        if let every = options.every, Date().timeIntervalSince(lastRepeat) >= every {
            lastRepeat = Date()
            if current.contains(where: \.isStarted) {
                let sent = packages.filter { $0.publish(on: publisher) }.count
                StandardOutput.line("sent \(sent) of \(counted(packages.count, "package")) to every started subscriber")
            }
        }
    }

    /// A publisher whose sources all end (replays, the pipe, sound cards given samples=N) ends once everything they published has
    /// left and the subscribers had --linger seconds to read it.
    private mutating func endOfSources() -> End? {
        guard sources.allEnd else { return nil }
        if deliveredAt == nil, sources.allFinished, publisher.losslessFramesPending == 0 {
            deliveredAt = Date()
            StandardOutput.line(sources.completion)
        }
        guard let at = deliveredAt, Date().timeIntervalSince(at) >= options.linger else { return nil }
        let ended = [
            sources.replays.isEmpty ? nil : "the replay", sources.pipe == nil ? nil : "the input",
            sources.soundCards.isEmpty ? nil : "the capture",
        ].compactMap { $0 }
        return End(reason: ended.joined(separator: " and ") + (ended.count == 1 ? " has" : " have") + " ended", delivered: true)
    }

    static func printList(_ subscribers: [SubscriberInfo]) {
        StandardOutput.line("subscribers: \(subscribers.count)")
        for s in subscribers {
            let filters = s.filters.isEmpty ? "no filters" : "filters \("\(s.filters)".terminalSafe)"
            StandardOutput.line(
                "  session \(s.sessionID) '\(s.description.terminalSafe)' from \(s.address.terminalSafe)\(s.userID.map { " CURVE \($0.terminalSafe)" } ?? ""): "
                    + "\(s.isStarted ? "started" : "stopped"), \(counted(s.framesSent, "frame")) sent, \(s.framesDropped) dropped, \(filters)"
                    + (s.selectedSources.map { ", sources \($0.map(String.init).joined(separator: ","))" } ?? "")
                    + s.signalFilters.map { ", signal filter \($0.summary)" }.joined())
        }
    }
}
