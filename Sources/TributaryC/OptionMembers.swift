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
    static func decode<T: Decodable>(_ type: T.Type, from text: String?) throws(APIError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data((text.flatMap { $0.isEmpty ? nil : $0 } ?? "{}").utf8))
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.argument, "the options are not a JSON object: \(error)")
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
