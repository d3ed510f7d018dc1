import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// Encodes then decodes, returning the transforms used and the decoded bytes.
private func roundTrip(
    _ payload: [UInt8], _ type: ChunkElementType, _ options: ChunkCodecOptions = .init(),
    codec: ChunkCodec? = nil
) throws -> (ChunkTransforms, [UInt8], Int) {
    let codec = try codec ?? ChunkCodec(options: options)
    var encoded = [UInt8](repeating: 0, count: ChunkCodec.maxEncodedSize(payloadSize: payload.count))
    let (n, transforms) = try payload.withUnsafeBytes { src in
        try encoded.withUnsafeMutableBytes { try codec.encode(src, elementType: type, into: $0) }
    }
    encoded.removeLast(encoded.count - n)
    var out = [UInt8](repeating: 0, count: payload.count)
    let m = try encoded.withUnsafeBytes { src in
        try out.withUnsafeMutableBytes { try codec.decode(src, elementType: type, transforms: transforms, into: $0) }
    }
    #expect(m == payload.count)
    return (transforms, out, n)
}

private func bytes<T>(_ values: [T]) -> [UInt8] { values.withUnsafeBytes { Array($0) } }

/// ADC-like samples: a sine plus a little pseudo-random noise, in counts.
private func adcCounts(_ n: Int, seed: UInt64) -> [Int16] {
    var rng = SplitMix64(seed: seed)
    return (0..<n).map { i in
        Int16(clamping: Int((8000 * sin(Double(i) * 0.01)).rounded()) + Int(rng.next() % 7) - 3)
    }
}

@Test(arguments: [0, 1, 7, 63, 64, 1000, 4097, 70_001])
func everyElementTypeAndOptionSetRoundTrips(count: Int) throws {
    var rng = SplitMix64(seed: UInt64(count) &+ 77)
    let counts = adcCounts(count, seed: UInt64(count))
    let step = 20.0 / 65536
    let payloads: [(ChunkElementType, [UInt8])] = [
        (.bytes, rng.bytes(count)),
        (.int16, bytes(counts)),
        (.int32, bytes(counts.map { Int32($0) * 300 })),
        (.float32, bytes(counts.map { Float($0) * 0.1 })),
        (.float64, bytes(counts.map { Double($0) * step })),  // quantised
        (.float64, bytes((0..<count).map { _ in Double(bitPattern: rng.next() >> 2) })),  // arbitrary bits
    ]
    let optionSets = [
        ChunkCodecOptions(), ChunkCodecOptions(bitShuffle: false, delta: false, quantiseFloats: false),
        ChunkCodecOptions(bitShuffle: true, delta: false, quantiseFloats: true),
        ChunkCodecOptions(bitShuffle: false, delta: true, quantiseFloats: true), .fast,
    ]
    for options in optionSets {
        let codec = try ChunkCodec(options: options)
        for (type, payload) in payloads {
            let (transforms, out, _) = try roundTrip(payload, type, codec: codec)
            #expect(out == payload, "\(type) \(transforms) count \(count)")
        }
    }
}

@Test func quantisedFloatsAreDetectedAndNearMissesAreNot() throws {
    // The fast path (entropy coding off); the coded path keeps such samples on the grid (CodedCodecTests).
    let codec = try ChunkCodec(options: ChunkCodecOptions(entropyCoding: false))
    let step = 20.0 / 65536
    let counts = adcCounts(10_000, seed: 1)
    var values = counts.map { Double($0) * step }
    let (t1, out1, n1) = try roundTrip(bytes(values), .float64, codec: codec)
    #expect(t1 == [.quantised, .delta, .bitShuffle])
    #expect(out1 == bytes(values))
    // One value a single ulp off the grid must disable the count coding, not be rounded onto it.
    values[5_000] = values[5_000].nextUp
    let (t2, out2, n2) = try roundTrip(bytes(values), .float64, codec: codec)
    #expect(t2 == [.bitShuffle])
    #expect(out2 == bytes(values))
    #expect(n2 > n1)
    // -0.0 is not reproduced by count 0 (it would come back as +0.0).
    values[5_000] = -0.0
    #expect(try roundTrip(bytes(values), .float64, codec: codec).0 == [.bitShuffle])
    values[5_000] = .nan
    #expect(try roundTrip(bytes(values), .float64, codec: codec).0 == [.bitShuffle])
    values[5_000] = 40_000 * step  // beyond Int16 counts
    #expect(try roundTrip(bytes(values), .float64, codec: codec).0 == [.bitShuffle])
}

@Test func quantisationChecksEveryBlockAndRejectsOffGridDataEarly() {
    let step = 10.0 / 32768
    // Full-scale counts (both Int16 limits) are accepted, wherever they fall.
    var counts = adcCounts(5_000, seed: 2)
    counts[0] = .min
    counts[4_999] = .max
    var values = counts.map { Double($0) * step }
    var out = [Int16](repeating: 0, count: values.count)
    values.withUnsafeBufferPointer { v in
        #expect(Quantisation.candidateStep(v) == step)
        #expect(out.withUnsafeMutableBufferPointer { Quantisation.toCounts(v, step: step, into: $0) })
    }
    #expect(out == counts)
    // A miss in the last, partial block (the check runs block by block) is still found.
    values[4_999] = values[4_999].nextDown
    values.withUnsafeBufferPointer { v in
        #expect(!out.withUnsafeMutableBufferPointer { Quantisation.toCounts(v, step: step, into: $0) })
    }
    // A computed sine shows no step that Int16 counts could reach.
    let sine = (0..<4_096).map { sin(Double($0) * 0.01) }
    sine.withUnsafeBufferPointer { #expect(Quantisation.candidateStep($0) == nil) }
}

@Test func decodeValidatesTransformsSizesAndCorruption() throws {
    let codec = try ChunkCodec()
    let payload = bytes(adcCounts(5_000, seed: 3).map { Double($0) * 0.5 })
    var encoded = [UInt8](repeating: 0, count: ChunkCodec.maxEncodedSize(payloadSize: payload.count))
    let (n, transforms) = try payload.withUnsafeBytes { src in
        try encoded.withUnsafeMutableBytes { try codec.encode(src, elementType: .float64, into: $0) }
    }
    encoded.removeLast(encoded.count - n)
    func decode(_ data: [UInt8], _ type: ChunkElementType, _ t: ChunkTransforms, bound: Int) throws(ChunkCodecError) {
        var out = [UInt8](repeating: 0, count: bound)
        var failure: ChunkCodecError?
        data.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                do throws(ChunkCodecError) { _ = try codec.decode(src, elementType: type, transforms: t, into: dst) } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
    }
    #expect(throws: ChunkCodecError.destinationTooSmall(needed: payload.count, available: payload.count - 8)) {
        try decode(encoded, .float64, transforms, bound: payload.count - 8)
    }
    #expect(throws: ChunkCodecError.unsupportedTransforms([.quantised], elementType: .int16)) {
        try decode(encoded, .int16, [.quantised], bound: payload.count)
    }
    #expect(throws: ChunkCodecError.unsupportedTransforms(ChunkTransforms(rawValue: 0x80), elementType: .float64)) {
        try decode(encoded, .float64, ChunkTransforms(rawValue: 0x80), bound: payload.count)
    }
    for cut in [0, 3, n / 2, n - 1] {
        do { try decode(Array(encoded[..<cut]), .float64, transforms, bound: payload.count); Issue.record("truncated at \(cut)") } catch {
            guard case .zstd = error else { Issue.record("unexpected \(error)"); continue }
        }
    }
    var corrupt = encoded
    corrupt[n - 10] ^= 0x01
    #expect(throws: ChunkCodecError.self) { try decode(corrupt, .float64, transforms, bound: payload.count) }
    // A payload that is not whole elements is refused on encode.
    #expect(throws: ChunkCodecError.payloadSize(byteCount: 3, elementType: .int16)) {
        var out = [UInt8](repeating: 0, count: 100)
        _ = try [UInt8](repeating: 1, count: 3).withUnsafeBytes { src in
            try out.withUnsafeMutableBytes { try codec.encode(src, elementType: .int16, into: $0) }
        }
    }
}

@Test func deltaRoundTripsWithWraparound() {
    let values: [Int16] = [0, .max, .min, -1, 1, 32000, -32000, 5]
    var d = [Int16](repeating: 0, count: values.count)
    var back = d
    values.withUnsafeBufferPointer { src in d.withUnsafeMutableBufferPointer { Delta.encode(src, into: $0) } }
    #expect(d[1] == .max && d[2] == 1)
    d.withUnsafeBufferPointer { src in back.withUnsafeMutableBufferPointer { Delta.decode(src, into: $0) } }
    #expect(back == values)
}
