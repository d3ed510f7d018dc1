import Foundation
import Testing

@testable import TributaryFormats

@Suite struct NPYTests {
    func header(_ dict: String, version: UInt8 = 1) -> Data {
        var text = dict
        let pre = version == 1 ? 10 : 12
        while (pre + text.utf8.count + 1) % 64 != 0 { text += " " }
        text += "\n"
        var d = Data(NPY.magic + [version, 0])
        let n = text.utf8.count
        d.append(contentsOf: version == 1 ? [UInt8(n & 0xFF), UInt8(n >> 8)] : [UInt8(n & 0xFF), UInt8(n >> 8), 0, 0])
        d.append(contentsOf: Array(text.utf8))
        return d
    }

    @Test func roundTripsEveryDType() throws {
        let arrays = [
            try NPYArray(channels: 2, samplesPerChannel: 3, samples: .float64([1, 2, 3, 4, 5, .pi])),
            try NPYArray(channels: 1, samplesPerChannel: 2, samples: .float32([1.5, -2]), isOneDimensional: true),
            try NPYArray(channels: 3, samplesPerChannel: 1, samples: .int16([-32768, 0, 32767])),
        ]
        for a in arrays {
            let data = NPY.encode(a)
            let headerEnd = data.firstIndex(of: 0x0A)! + 1
            #expect(headerEnd % 64 == 0)
            #expect(try NPY.decode(data) == a)
        }
    }

    @Test func versionTwoAndThreeAndFortran() throws {
        var d = header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", version: 2)
        // Fortran order: column-major, so memory holds (c0s0, c1s0, c0s1, c1s1, c0s2, c1s2).
        for v in [1.0, 10, 2, 20, 3, 30] { withUnsafeBytes(of: v.bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        let a = try NPY.decode(d)
        #expect(a.samples == .float64([1, 2, 3, 10, 20, 30]))
        var d3 = header("{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2,)}", version: 3)
        d3.append(contentsOf: [1, 0, 2, 0])
        #expect(try NPY.decode(d3).samples == .int16([1, 2]))
    }

    @Test func errorsNameTheProblem() {
        func problem(_ d: Data) -> NPYError.Problem? {
            do { _ = try NPY.decode(d); return nil } catch let e as NPYError { return e.problem } catch { return nil }
        }
        #expect(problem(Data("hello world".utf8)) == .notNPY)
        #expect(problem(Data(NPY.magic + [9, 0, 0, 0])) == .unsupportedVersion(major: 9, minor: 0))
        #expect(problem(Data(NPY.magic + [1, 0, 200])) == .truncatedHeader(at: 9))
        #expect(problem(header("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }")) == .unsupportedDType(">f8"))
        #expect(problem(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2), }")) == .unsupportedShape([2, 2, 2]))
        let preamble = header("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }")
        #expect(problem(preamble + Data(count: 10)) == .truncatedData(at: preamble.count, expected: 32, available: 10))
        if case .badHeader(_, let at)? = problem(header("{'descr': '<f8', 'fortran_order': maybe, 'shape': (4,), }")) {
            #expect(at > 10)
        } else {
            Issue.record("expected a bad header")
        }
        let e = NPYError(file: "x.npy", problem: .truncatedData(at: 64, expected: 32, available: 10))
        #expect(e.description == "x.npy: truncated data at byte 74: the shape needs 32 bytes from byte 64, 10 present")
    }

    @Test func fileRoundTripAndMissingFile() throws {
        let path = NSTemporaryDirectory() + "tributary-npy-test-\(getpid()).npy"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let a = try NPYArray(channels: 2, samplesPerChannel: 2, samples: .float64([1, 2, 3, 4]))
        try NPY.write(a, path: path)
        #expect(try NPY.read(path: path) == a)
        #expect(a.channelAsDouble(1) == [3, 4])
        #expect(throws: NPYError.self) { try NPY.read(path: path + ".missing") }
    }
}
