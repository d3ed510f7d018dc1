import Foundation

/// A `key=value,key=value` specification as the command line takes them (`serve --simulate`,
/// `serve --stdin`): each key at most once, values read and range-checked one key at a time, and a
/// key nobody asked for reported by name.
package struct KeyValueSpec {
    /// The text as given.
    package let text: String
    private var fields: [String: String] = [:]

    /// Splits the text into its fields (none for an empty text).
    /// - Throws: `KeyValueSpecError` for an item that is not `key=value` or a key given twice.
    package init(parsing text: String) throws(KeyValueSpecError) {
        self.text = text
        if text.isEmpty { return }
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { throw KeyValueSpecError("'\(item)' is not key=value") }
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            guard fields[key] == nil else { throw KeyValueSpecError("'\(key)' is given twice") }
            fields[key] = parts[1].trimmingCharacters(in: .whitespaces)
        }
    }

    /// The value of `key` (nil when absent), which is then taken.
    package mutating func take(_ key: String) -> String? { fields.removeValue(forKey: key) }

    /// The value of `key` as a finite number for which `valid` holds (nil when absent).
    /// - Throws: `KeyValueSpecError` saying `what` was expected.
    package mutating func number(_ key: String, _ valid: (Double) -> Bool, _ what: String) throws(KeyValueSpecError) -> Double? {
        guard let field = take(key) else { return nil }
        guard let value = Double(field), value.isFinite, valid(value) else { throw KeyValueSpecError("\(key)=\(field): expected \(what)") }
        return value
    }

    /// The value of `key` as an integer in `range` (nil when absent).
    /// - Throws: `KeyValueSpecError` naming the range.
    package mutating func integer(_ key: String, _ range: ClosedRange<Int>) throws(KeyValueSpecError) -> Int? {
        guard let field = take(key) else { return nil }
        guard let value = Int(field), range.contains(value) else {
            throw KeyValueSpecError("\(key)=\(field): expected an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// The value of `key` as `MIN:MAX`, finite numbers with MIN < MAX (nil when absent).
    /// - Throws: `KeyValueSpecError` showing `example`.
    package mutating func range(_ key: String, example: String) throws(KeyValueSpecError) -> ClosedRange<Double>? {
        guard let field = take(key) else { return nil }
        let ends = field.split(separator: ":", omittingEmptySubsequences: false).map { Double($0) }
        guard ends.count == 2, let lo = ends[0], let hi = ends[1], lo.isFinite, hi.isFinite, lo < hi else {
            throw KeyValueSpecError("\(key)=\(field): expected MIN:MAX with MIN < MAX, e.g. \(example)")
        }
        return lo...hi
    }

    /// The value of `key` as one of `choices` (nil when absent).
    /// - Throws: `KeyValueSpecError` listing the choices.
    package mutating func choice<T: RawRepresentable & CaseIterable>(_ key: String, _: T.Type) throws(KeyValueSpecError) -> T?
    where T.RawValue == String {
        guard let field = take(key) else { return nil }
        guard let value = T(rawValue: field) else {
            throw KeyValueSpecError("\(key)=\(field): expected one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    /// Refuses the keys not taken.
    /// - Parameter known: every key the specification has, listed in the error.
    package func finish(known: [String]) throws(KeyValueSpecError) {
        if let unknown = fields.keys.sorted().first {
            throw KeyValueSpecError("unknown key '\(unknown)' (\(known.joined(separator: ", ")))")
        }
    }
}

/// What is wrong with a `key=value` specification.
package struct KeyValueSpecError: Error, Hashable, Sendable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
