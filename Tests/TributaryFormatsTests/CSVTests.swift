import Testing
import TributaryFormats

@Test func csvRoundTripsExactly() throws {
    // Values whose shortest decimal forms are awkward: tiny, huge, negative zero, non-finite, ulp steps.
    let special: [Double] = [
        0.1, 1.0 / 3, -0.0, 1e-300, Double.leastNonzeroMagnitude, 1.7976931348623157e308, .infinity, -.infinity,
        1.0.nextUp, 123456789.123456789, -2.5e-5, 20.0 / 65536 * 12345,
    ]
    for (channels, names) in [(1, nil), (3, ["ch0", "a,b", "say \"hi\""]), (12, nil)] as [(Int, [String]?)] {
        let samples = special.count
        let values = (0..<(channels * samples)).map { special[$0 % special.count] * Double($0 % 7 + 1) }
        let table = CSVTable(channelNames: names, channelCount: channels, values: values)
        let back = try CSVTable.decode(try table.encoded())
        #expect(back.channelNames == names)
        #expect(back.channelCount == channels && back.sampleCount == samples)
        #expect(back.values.map(\.bitPattern) == values.map(\.bitPattern))
    }
    let nan = try CSVTable.decode(try CSVTable(channelCount: 1, values: [.nan]).encoded())
    #expect(nan.values.count == 1 && nan.values[0].isNaN)
}

@Test func csvLayoutIsOneColumnPerChannel() throws {
    let text = try CSVTable(channelNames: ["x", "y"], channelCount: 2, values: [1, 2, 3, 0.5, 0.25, 0.125]).encoded()
    #expect(text == "x,y\n1.0,0.5\n2.0,0.25\n3.0,0.125\n")
}

@Test func csvReadsHeaderlessCRLFAndBlankLines() throws {
    let table = try CSVTable.decode("1, 2\r\n\r\n3 ,4\r\n")
    #expect(table.channelNames == nil && table.channelCount == 2 && table.values == [1, 3, 2, 4])
    let forced = try CSVTable.decode("1,2\n3,4\n", header: .present)
    #expect(forced.channelNames == ["1", "2"] && forced.values == [3, 4])
}

@Test func csvErrorsNameFileLineAndColumn() {
    func expectError(_ text: String, _ location: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do { _ = try CSVTable.decode(text, file: "d.csv"); Issue.record("accepted", sourceLocation: sourceLocation) } catch {
            #expect(error.file == "d.csv", sourceLocation: sourceLocation)
            #expect(error.location == location, "\(error)", sourceLocation: sourceLocation)
        }
    }
    expectError("a,b\n1,2\n3,x\n", "line 3, column 2")
    expectError("a,b\n1,2\n\n3,4,5\n", "line 4, column 3")
    expectError("1,2\n3\n", "line 2, column 2")
    expectError("\"a,b\n", "line 1, column 1")
    expectError("", "")
}

/// Issue 8 item 14: Swift's Double(String) also reads hexadecimal ("0x10" = 16) and turns "1e400" into
/// infinity; a CSV of measurements must do neither silently.
@Test func csvAcceptsOnlyDecimalNumbersWithinFloat64() {
    func expectError(_ text: String, _ location: String, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do { _ = try CSVTable.decode(text, file: "d.csv"); Issue.record("accepted \(text)", sourceLocation: sourceLocation) } catch {
            #expect(error.location == location, "\(error)", sourceLocation: sourceLocation)
            #expect(error.reason.contains(reason), "\(error)", sourceLocation: sourceLocation)
        }
    }
    expectError("a,b\n1,0x10\n", "line 2, column 2", "\"0x10\" is not a decimal number")
    expectError("a,b\n1,2\n1e400,3\n", "line 3, column 1", "1e400 is out of range of float64")
    expectError("a,b\n1,-1E+309\n", "line 2, column 2", "out of range of float64")
    for bad in ["0x1p3", "1e", "e5", ".", "+-1", "1.2.3", "--1", "infinit", "nan(1)", "1_000", "١"] {
        expectError("a\n\(bad)\n", "line 2, column 1", "not a decimal number")
    }
    expectError("a,b\n1,\n", "line 2, column 2", "empty field")
    let good = ["0", "-0", "+1.5", ".5", "5.", "1e-5", "1E+5", "-2.5e3", "nan", "NaN", "inf", "-inf", "+Infinity", "1e-400", "007"]
    let table = try? CSVTable.decode("x\n" + good.joined(separator: "\n") + "\n")
    let values = table?.values ?? []
    #expect(values.count == good.count)
    if values.count == good.count {
        #expect(values[0] == 0 && values[1].sign == .minus && values[2] == 1.5 && values[3] == 0.5 && values[4] == 5)
        #expect(values[5] == 1e-5 && values[6] == 1e5 && values[7] == -2500 && values[8].isNaN && values[9].isNaN)
        #expect(values[10] == .infinity && values[11] == -.infinity && values[12] == .infinity && values[13] == 0 && values[14] == 7)
    }
    // What the writer writes reads back exactly, non-finite values included.
    let special = CSVTable(
        channelNames: ["a"], channelCount: 1, values: [.nan, .infinity, -.infinity, 1e-310, -0.0, 1.7976931348623157e308])
    let back = try? CSVTable.decode(try! special.encoded())
    #expect(back?.values.map(\.bitPattern) == special.values.map(\.bitPattern))
}
