import Testing
import TributaryFormats

@Test func formatErrorNamesFileLocationAndReason() {
    let error = FormatError(file: "a.csv", location: "line 3, column 2", reason: "not a number: 'x'")
    #expect(error.description == "a.csv: line 3, column 2: not a number: 'x'")
}
