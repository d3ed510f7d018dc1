import TributaryDSP
import TributaryView

/// `view` and `monitor`'s `--filter SPEC` and `--notch F0:Q`: the filter of `tributary process` (same
/// specs, same design), applied to the shown channels for display only.
enum DisplayFilterOptions {
    /// The two options as given.
    struct Given {
        var filter: FilterSpec?
        var notch: NotchSpec?
    }

    static var options: OptionTable<Given> {
        OptionTable([
            .custom(
                "--filter", "SPEC",
                """
                show every channel through this IIR filter, as 'tributary process --filter'
                (e.g. butter:8:lowpass:1000): trace, spectrum, spectrogram and readings;
                for display only (what the publisher sends is unchanged)
                """
            ) { given, text in given.filter = try FilterSpec(text) },
            .custom(
                "--notch", "F0:Q",
                """
                show every channel through a notch at F0 Hz of quality Q (e.g. 50:30),
                after --filter
                """
            ) { given, text in given.notch = try NotchSpec(text) },
        ])
    }

    /// The display filter of the options; nil when neither is given.
    static func filter(_ given: Given) -> DisplayFilter? {
        let filter = given.filter, notch = given.notch
        guard filter != nil || notch != nil else { return nil }
        let text = [filter.map(\.text), notch.map { "notch \($0.text)" }].compactMap { $0 }.joined(separator: ", ")
        return DisplayFilter(text: text) { rate in
            var coefficients = try filter?.sections(rate: rate).coefficients ?? []
            if let notch {
                // A notch is one second-order section: b and a (3 each) divided by a[0].
                let (b, a) = try notch.function(rate: rate).normalized()
                guard b.count == 3, a.count == 3 else { throw ProcessError(text: "--notch '\(notch.text)': not one second-order section") }
                coefficients += [b[0], b[1], b[2], 1, a[1], a[2]]
            }
            return SecondOrderSections(coefficients: coefficients)
        }
    }
}

extension ProcessError: CustomStringConvertible {
    var description: String { text }
}
