import Foundation

/// The members of a JSON options object of the C interface (`tributary_analyze_*`,
/// `tributary_subscription_open`): unknown names are refused with the list of known ones, and a
/// member of the wrong type is refused with an error naming it and what it must be.
struct OptionMembers {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private let container: KeyedDecodingContainer<Key>

    /// - Throws: `APIError(.argument)` naming the first member that is not in `known`.
    init(_ decoder: any Decoder, known: Set<String>) throws {
        container = try decoder.container(keyedBy: Key.self)
        if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
            throw APIError(.argument, "unknown option '\(unknown.stringValue)' (options: \(known.sorted().joined(separator: ", ")))")
        }
    }

    /// The member `name` as `T`, nil when absent or null.
    /// - Throws: `APIError(.argument)` "option 'NAME' must be WHAT" when it is not a `T`.
    func get<T: Decodable>(_ name: String, _ type: T.Type, _ what: String) throws -> T? {
        let key = Key(stringValue: name)
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
        do { return try container.decode(T.self, forKey: key) } catch { throw APIError(.argument, "option '\(name)' must be \(what)") }
    }

    /// A channel selection given as an array of integers or as a channel-list string ("0-3"), as the
    /// string of the command-line option `--channels`.
    func channels(_ name: String = "channels") throws -> String? {
        if let list = try? get(name, [Int].self, "") { return list.map(String.init).joined(separator: ",") }
        return try get(name, String.self, "a channel list such as \"0-3\" or an array of integers")
    }
}

extension OptionMembers {
    /// Decodes the options type `T` (whose `init(from:)` reads an `OptionMembers`) from the options
    /// text of a C call; NULL or empty text is the empty object.
    /// - Throws: the `APIError` of a member, else `APIError(.argument)` "the options are not a JSON object".
    static func decode<T: Decodable>(_ type: T.Type, from text: String?, with decoder: JSONDecoder = JSONDecoder()) throws(APIError) -> T {
        do {
            return try decoder.decode(T.self, from: Data((text.flatMap { $0.isEmpty ? nil : $0 } ?? "{}").utf8))
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.argument, "the options are not a JSON object: \(error)")
        }
    }

    /// Reads the options text of a C call (NULL or empty text is the empty object) with `body`, which
    /// gets its members (those outside `known` refused) and makes the options from them: options read
    /// straight into the library's types, without a decodable copy of their members.
    /// - Throws: the `APIError` of a member or of `body`, else as `decode`.
    static func read<T>(_ text: String?, known: Set<String>, _ body: @escaping (OptionMembers) throws -> T) throws(APIError) -> T {
        let decoder = JSONDecoder()
        decoder.userInfo[Reading.reader] = Reading.Reader(known: known) { try body($0) }
        guard let options = try decode(Reading.self, from: text, with: decoder).value as? T else {
            throw APIError(.internal, "the options were not read")
        }
        return options
    }

    /// What `read` decodes: its body's result, made in `init(from:)` from the members.
    private struct Reading: Decodable {
        /// The known members and the body, handed to `init(from:)` in the decoder's user info (only
        /// for the length of one `read`).
        final class Reader: @unchecked Sendable {
            let known: Set<String>
            let body: (OptionMembers) throws -> Any
            init(known: Set<String>, body: @escaping (OptionMembers) throws -> Any) { (self.known, self.body) = (known, body) }
        }

        static let reader = CodingUserInfoKey(rawValue: "tributary.options.reader")!

        let value: Any

        init(from decoder: any Decoder) throws {
            guard let reader = decoder.userInfo[Self.reader] as? Reader else { throw APIError(.internal, "no options reader") }
            value = try reader.body(try OptionMembers(decoder, known: reader.known))
        }
    }
}

/// The value named by the option text `name` (a window, a detrend, …; nil when the option is absent),
/// read by `parse`.
/// - Throws: `APIError(.argument, message(name))` when `parse` knows no such name.
func namedValue<T>(_ name: String?, _ parse: (String) -> T?, else message: (String) -> String) throws(APIError) -> T? {
    guard let name else { return nil }
    guard let value = parse(name) else { throw APIError(.argument, message(name)) }
    return value
}

/// Options a C call gives as a JSON object (`tributary_analyze_*`, `tributary_subscription_open`),
/// made by `init(_:)` from the members: each read (its type checked) before any is checked further,
/// as the command's parser does.
protocol JSONOptions {
    /// The members the options know; others are refused.
    static var keys: Set<String> { get }
    init(_ members: OptionMembers) throws
}

extension JSONOptions {
    /// The options of a C call's options text (NULL or empty: every default).
    init(json text: String?) throws(APIError) {
        self = try OptionMembers.read(text, known: Self.keys) { members in try Self(members) }
    }
}
