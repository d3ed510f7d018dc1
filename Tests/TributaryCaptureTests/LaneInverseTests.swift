import CLinearPredictor
import Foundation
import Testing
import TributaryTestSupport

@testable import TributaryCapture

/// The order-8 predictor's inverse four channels at a time (`tributary_linear8_x4`, AVX2) or eight
/// (`tributary_linear8_x8`, AVX-512F, where the processor has it) and the decoder's use of them
/// (`NumericCodec.finishLanes`): exact against the rule of docs/CAPTURE.md §5.1
/// wherever it reports a latent final, stopping at the first block with a latent outside 32 bits,
/// and every stream decoding bit for bit whichever way its segments were undone.
@Suite(.enabled(if: tributary_linear8_x4_available(), "the lane kernels need AVX2 (and AVX-512F for eight lanes)"))
struct LaneInverseTests {
    static let block = 64

    /// The lane counts this processor has kernels for.
    static let widths = tributary_linear8_x8_available() ? [4, 8] : [4]

    /// Runs the kernel of `residuals.count` lanes (4 or 8) of equal length: how many samples it
    /// reports final, and the latents.
    static func kernel(_ residuals: [[Int64]], coefficients: [[Int64]], shifts: [Int64]) -> (finished: Int, latents: [[Int64]]) {
        let n = residuals[0].count, lanes = residuals.count
        let v = residuals.flatMap { $0 }, c = coefficients.flatMap { $0 }
        var x = [Int64](repeating: 0x7777, count: lanes * n)
        var finished = 0
        v.withUnsafeBufferPointer { vp in
            x.withUnsafeMutableBufferPointer { xp in
                let r = vp.baseAddress!, o = xp.baseAddress!
                if lanes == 8 {
                    let inputs: [UnsafePointer<Int64>?] = (0..<8).map { r + $0 * n }
                    let outputs: [UnsafeMutablePointer<Int64>?] = (0..<8).map { o + $0 * n }
                    finished = tributary_linear8_x8(inputs, outputs, n, c, shifts)
                } else {
                    finished = tributary_linear8_x4(r, r + n, r + 2 * n, r + 3 * n, o, o + n, o + 2 * n, o + 3 * n, n, c, shifts)
                }
            }
        }
        return (finished, (0..<lanes).map { Array(x[($0 * n)..<($0 * n + n)]) })
    }

    /// Where the kernel must stop: the start of the first block in which some lane's latent leaves
    /// [−2^31, 2^31), else n.
    static func expectedFinish(_ latents: [[Int64]]) -> Int {
        let n = latents[0].count
        for i in 0..<n where latents.contains(where: { $0[i] < Int64(Int32.min) || $0[i] > Int64(Int32.max) }) {
            return i / block * block
        }
        return n
    }

    static let lengths = [1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000]

    /// Order-8 coefficients of `lanes` different stable filters at shift 20, as the encoder writes them.
    static func stableFilters(_ lanes: Int, _ rng: inout SplitMix64) -> [[Int64]] {
        (0..<lanes).map { _ in (0..<8).map { _ in Int64(rng.next() % (1 << 18)) - (1 << 17) } }
    }

    /// `n` residuals of any sign below 2^`magnitude` in each of `lanes` lanes.
    static func wideResiduals(_ lanes: Int, _ n: Int, magnitude: Int64, _ rng: inout SplitMix64) -> [[Int64]] {
        (0..<lanes).map { _ in (0..<n).map { _ in Int64(bitPattern: rng.next()) >> (63 - magnitude) } }
    }

    /// The rule's latents of each lane (PredictorInverseTests.reference) with its coefficients and shift.
    static func references(_ residuals: [[Int64]], _ c: [[Int64]], _ shifts: [Int64]) -> [[Int64]] {
        residuals.indices.map { PredictorInverseTests.reference(residuals[$0], coefficients: c[$0], shift: Int(shifts[$0])) }
    }

    /// `n` residuals of a few hundred in each of `lanes` lanes.
    static func smallResiduals(_ lanes: Int, _ n: Int, _ rng: inout SplitMix64) -> [[Int64]] {
        (0..<lanes).map { _ in (0..<n).map { _ in Int64(rng.next() % 801) - 400 } }
    }

    @Test(arguments: widths)
    func realisticLanesMatchTheRule(lanes: Int) {
        var rng = SplitMix64(seed: 41)
        for n in Self.lengths {
            // Different stable filters at shift 20 (as the encoder writes), residuals of a few hundred.
            let c = Self.stableFilters(lanes, &rng)
            let residuals = Self.smallResiduals(lanes, n, &rng)
            let expected = (0..<lanes).map { PredictorInverseTests.reference(residuals[$0], coefficients: c[$0], shift: 20) }
            let (finished, latents) = Self.kernel(residuals, coefficients: c, shifts: [Int64](repeating: 20, count: lanes))
            #expect(finished == n, "n \(n)")
            #expect(latents == expected, "n \(n)")
        }
    }

    @Test(arguments: widths)
    func anythingMatchesTheRuleUpToTheFirstBlockOutside32Bits(lanes: Int) {
        // Any coefficients within 32 bits, shifts 1 … 62 per lane, residuals of any size: the sums
        // wrap, the latents leave 32 bits sooner or later (or never, for small residuals and large shifts).
        var rng = SplitMix64(seed: 43)
        var stoppedEarly = 0, ranThrough = 0
        for trial in 0..<200 {
            let n = Self.lengths[trial % Self.lengths.count]
            let shifts = (0..<lanes).map { _ in Int64(rng.next() % 62) + 1 }
            let c = (0..<lanes).map { _ in (0..<8).map { _ in Int64(Int32(truncatingIfNeeded: rng.next())) >> Int64(rng.next() % 32) } }
            let magnitude = Int64(rng.next() % 40)
            let residuals = Self.wideResiduals(lanes, n, magnitude: magnitude, &rng)
            let expected = Self.references(residuals, c, shifts)
            let (finished, latents) = Self.kernel(residuals, coefficients: c, shifts: shifts)
            let stop = Self.expectedFinish(expected)
            #expect(finished == stop, "trial \(trial)")
            for k in 0..<lanes {
                #expect(latents[k][..<min(finished, stop)] == expected[k][..<min(finished, stop)], "trial \(trial), lane \(k)")
            }
            if stop < n { stoppedEarly += 1 } else { ranThrough += 1 }
        }
        // Both outcomes were exercised.
        #expect(stoppedEarly > 10 && ranThrough > 10, "\(stoppedEarly) stopped early, \(ranThrough) ran through")
    }

    @Test(arguments: widths)
    func theBoundsAreExactlyThoseOf32Bits(lanes: Int) {
        // Zero coefficients (the prediction is (2^19) >> 20 = 0): the latents are the residuals.
        let zero = [[Int64]](repeating: [Int64](repeating: 0, count: 8), count: lanes)
        let shifts = [Int64](repeating: 20, count: lanes)
        let n = 200
        for (value, inside) in [
            (Int64(Int32.max), true), (Int64(Int32.min), true), (Int64(Int32.max) + 1, false), (Int64(Int32.min) - 1, false),
        ] {
            var residuals = [[Int64]](repeating: [Int64](repeating: 5, count: n), count: lanes)
            residuals[lanes - 2][150] = value
            let (finished, latents) = Self.kernel(residuals, coefficients: zero, shifts: shifts)
            #expect(finished == (inside ? n : 128), "\(value)")
            if inside { #expect(latents == residuals) }
        }
        // A coefficient outside 32 bits (in the last lane): nothing is final.
        var c = zero
        c[lanes - 1][5] = Int64(1) << 31
        #expect(Self.kernel([[Int64]](repeating: [1, 2, 3], count: lanes), coefficients: c, shifts: shifts).finished == 0)
        c[lanes - 1][5] = -(Int64(1) << 31)
        #expect(Self.kernel([[Int64]](repeating: [1, 2, 3], count: lanes), coefficients: c, shifts: shifts).finished == 3)
    }

    /// The sample kinds of `tributary_linear8_samples_x4`.
    static let kinds = [TRIBUTARY_SAMPLES_GRID64, TRIBUTARY_SAMPLES_GRID32, TRIBUTARY_SAMPLES_INT32, TRIBUTARY_SAMPLES_INT16].map {
        Int32($0)
    }

    /// Bytes a sample of `kind`.
    static func width(_ kind: Int32) -> Int {
        switch Int(kind) {
        case Int(TRIBUTARY_SAMPLES_GRID64): 8
        case Int(TRIBUTARY_SAMPLES_INT16): 2
        default: 4
        }
    }

    /// The four-lane inverse fused with the conversion to samples of `kind`: how many it reports,
    /// and the samples (each widened to 64 bits; a byte past each lane's end checked untouched).
    static func samplesKernel(
        _ residuals: [[Int64]], coefficients: [[Int64]], shifts: [Int64], kind: Int32,
        offset: [Double] = gridOffsets, gain: [Double] = gridGains
    ) -> (finished: Int, samples: [[UInt64]]) {
        let n = residuals[0].count, w = width(kind), lane = n * w + 16
        let v = residuals.flatMap { $0 }, c = coefficients.flatMap { $0 }
        var out = [UInt8](repeating: 0x77, count: 4 * lane)
        let finished = v.withUnsafeBufferPointer { vp in
            out.withUnsafeMutableBytes { op in
                let inputs: [UnsafePointer<Int64>?] = (0..<4).map { vp.baseAddress! + $0 * n }
                let outputs: [UnsafeMutableRawPointer?] = (0..<4).map { op.baseAddress! + $0 * lane }
                return tributary_linear8_samples_x4(inputs, outputs, n, c, shifts, kind, offset, gain)
            }
        }
        for k in 0..<4 { #expect(out[(k * lane + n * w)..<(k * lane + lane)].allSatisfy { $0 == 0x77 }, "lane \(k) written past its end") }
        let samples = (0..<4).map { k in
            (0..<n).map { i in (0..<w).reduce(UInt64(0)) { $0 | UInt64(out[k * lane + i * w + $1]) << (8 * $1) } }
        }
        return (finished, samples)
    }

    /// docs/CAPTURE.md §5.1's conversion of latents to samples of `kind` (grids: product and sum
    /// each rounded, then to binary32 for that grid; integers: the low bits), widened to 64 bits.
    static func convert(_ latents: [Int64], kind: Int32, offset: Double, gain: Double) -> [UInt64] {
        switch Int(kind) {
        case Int(TRIBUTARY_SAMPLES_GRID64): latents.map { (offset + gain * Double($0)).bitPattern }
        case Int(TRIBUTARY_SAMPLES_GRID32): latents.map { UInt64(Float(offset + gain * Double($0)).bitPattern) }
        case Int(TRIBUTARY_SAMPLES_INT32): latents.map { UInt64(UInt32(truncatingIfNeeded: $0)) }
        default: latents.map { UInt64(UInt16(truncatingIfNeeded: $0)) }
        }
    }

    static let gridOffsets = [-10.0, 0.0, 1.5, 3.0e-7], gridGains = [20.0 / 65536, 1.0 / 3.0, 0.1, 1.0000003e-3]

    @Test(arguments: kinds)
    func fusedLanesMatchTheRuleAndTheConversion(kind: Int32) {
        var rng = SplitMix64(seed: 47)
        for n in Self.lengths {
            let c = Self.stableFilters(4, &rng)
            let residuals = Self.smallResiduals(4, n, &rng)
            let shifts = [Int64](repeating: 20, count: 4)
            let expected = (0..<4).map {
                Self.convert(
                    PredictorInverseTests.reference(residuals[$0], coefficients: c[$0], shift: 20),
                    kind: kind, offset: Self.gridOffsets[$0], gain: Self.gridGains[$0])
            }
            let (finished, samples) = Self.samplesKernel(residuals, coefficients: c, shifts: shifts, kind: kind)
            #expect(finished == n, "n \(n)")
            #expect(samples == expected, "n \(n)")
        }
    }

    @Test(arguments: kinds)
    func fusedLanesAreExactWheneverTheyReportDone(kind: Int32) {
        // Anything within the kernels' contract: where the fused kernel reports every sample done,
        // each is the rule's latent converted; where it declines, the latents were large (beyond
        // 2^30) or the sums could leave binary64's exact integers. Both outcomes occur.
        var rng = SplitMix64(seed: 53)
        var declined = 0, done = 0
        for trial in 0..<300 {
            let n = Self.lengths[trial % Self.lengths.count]
            let shifts = (0..<4).map { _ in Int64(rng.next() % 40) + 1 }
            let c = (0..<4).map { k in
                (0..<8).map { _ in Int64(Int32(truncatingIfNeeded: rng.next())) >> Int64(rng.next() % 32 + (shifts[k] < 12 ? 20 : 0)) }
            }
            let magnitude = Int64(rng.next() % 34)
            let residuals = Self.wideResiduals(4, n, magnitude: magnitude, &rng)
            let latents = Self.references(residuals, c, shifts)
            let (finished, samples) = Self.samplesKernel(residuals, coefficients: c, shifts: shifts, kind: kind)
            if finished == n {
                done += 1
                for k in 0..<4 {
                    #expect(
                        samples[k] == Self.convert(latents[k], kind: kind, offset: Self.gridOffsets[k], gain: Self.gridGains[k]),
                        "trial \(trial), lane \(k)")
                    #expect(latents[k].allSatisfy { $0 >= -(1 << 30) && $0 < 1 << 30 }, "trial \(trial), lane \(k)")
                }
            } else {
                declined += 1
                #expect(finished < n && finished % Self.block == 0, "trial \(trial)")
            }
        }
        #expect(declined > 20 && done > 20, "\(declined) declined, \(done) done")
    }

    @Test(arguments: kinds)
    func fusedLanesDeclineResidualsTheirArithmeticCannotHold(kind: Int32) {
        // Zero coefficients: the latents are the residuals. One residual per value below in lane 2,
        // among small ones: beyond the kernel's 2^30 (its exact conversion ends at 2^51, and some
        // of these make the bits of an infinity or a NaN there), the call must decline.
        let zero = [[Int64]](repeating: [Int64](repeating: 0, count: 8), count: 4)
        let shifts = [Int64](repeating: 20, count: 4)
        let n = 200
        let outside: [Int64] = [
            1 << 30, -(1 << 30) - 1, 1 << 51, -(1 << 51), (1 << 51) + 12345, Int64.max, Int64.min,
            0x3CC8_0000_0000_0000, 0x3CB8_0000_0000_0001, -0x3CB8_0000_0000_0000, 0x7FF0_0000_0000_0000 - 0x4338_0000_0000_0000,
            Int64(bitPattern: 0xFFF8_0000_0000_0000 &- 0x4338_0000_0000_0000),
        ]
        for value in outside {
            var residuals = [[Int64]](repeating: [Int64](repeating: 5, count: n), count: 4)
            residuals[2][150] = value
            #expect(Self.samplesKernel(residuals, coefficients: zero, shifts: shifts, kind: kind).finished < n, "\(value)")
        }
        var residuals = [[Int64]](repeating: [Int64](repeating: 5, count: n), count: 4)
        residuals[2][150] = (1 << 30) - 1
        residuals[1][20] = -(1 << 30)
        let (finished, samples) = Self.samplesKernel(residuals, coefficients: zero, shifts: shifts, kind: kind)
        #expect(finished == n)
        #expect(samples == (0..<4).map { Self.convert(residuals[$0], kind: kind, offset: Self.gridOffsets[$0], gain: Self.gridGains[$0]) })
    }

    /// Coefficients of `order` (the rest 0, as the decoder pads a lower order) for each lane.
    static func padded(orders: [Int], rng: inout SplitMix64) -> [[Int64]] {
        orders.map { order in (0..<8).map { j in j < order ? Int64(rng.next() % (1 << 19)) - (1 << 18) : 0 } }
    }

    @Test(arguments: [[2, 2, 2, 2], [4, 4, 4, 4], [2, 4, 2, 2], [8, 2, 4, 2], [1, 3, 2, 4]])
    func lowerOrdersMatchTheRuleInEveryKind(orders: [Int]) {
        // The kernels leave out the products of coefficients that are 0 in every lane (orders 2 and
        // 4); lanes of different orders run at the highest. Latents and every sample kind, against
        // the rule; and where anything within the contract is reported done, it is exact.
        var rng = SplitMix64(seed: 59)
        for n in Self.lengths {
            let c = Self.padded(orders: orders, rng: &rng)
            let residuals = Self.smallResiduals(4, n, &rng)
            let shifts = [Int64](repeating: 20, count: 4)
            let latents = (0..<4).map { PredictorInverseTests.reference(residuals[$0], coefficients: c[$0], shift: 20) }
            let fits = latents.allSatisfy { $0.allSatisfy { $0 >= -(1 << 30) && $0 < 1 << 30 } }
            let (finished, undone) = Self.kernel(residuals, coefficients: c, shifts: shifts)
            #expect(finished == Self.expectedFinish(latents), "orders \(orders), n \(n)")
            for k in 0..<4 { #expect(undone[k][..<finished] == latents[k][..<finished], "orders \(orders), n \(n), lane \(k)") }
            for kind in Self.kinds {
                let (done, samples) = Self.samplesKernel(residuals, coefficients: c, shifts: shifts, kind: kind)
                if fits { #expect(done == n, "orders \(orders), n \(n), kind \(kind)") }
                if done == n {
                    #expect(
                        samples
                            == (0..<4).map { Self.convert(latents[$0], kind: kind, offset: Self.gridOffsets[$0], gain: Self.gridGains[$0]) },
                        "orders \(orders), n \(n), kind \(kind)")
                }
            }
        }
        var done = 0
        for trial in 0..<100 {
            let n = Self.lengths[trial % Self.lengths.count]
            let shifts = (0..<4).map { _ in Int64(rng.next() % 40) + 1 }
            let c = (0..<4).map { k in
                (0..<8).map { j in j < orders[k] ? Int64(Int32(truncatingIfNeeded: rng.next())) >> Int64(rng.next() % 32) : 0 }
            }
            let magnitude = Int64(rng.next() % 30)
            let residuals = Self.wideResiduals(4, n, magnitude: magnitude, &rng)
            let latents = Self.references(residuals, c, shifts)
            let kind = Self.kinds[trial % Self.kinds.count]
            let (finished, samples) = Self.samplesKernel(residuals, coefficients: c, shifts: shifts, kind: kind)
            guard finished == n else { continue }
            done += 1
            #expect(
                samples == (0..<4).map { Self.convert(latents[$0], kind: kind, offset: Self.gridOffsets[$0], gain: Self.gridGains[$0]) },
                "trial \(trial)")
        }
        #expect(done > 10, "\(done) of 100 done")
    }

    @Test func lowerOrderSegmentsGoThroughTheLanes() throws {
        // An AR(2) process per channel (white noise through a two-pole filter): its best predictor
        // is of order 2, higher orders gain nothing, so the encoder chooses 2 (or 4). Those segments
        // are undone in the lanes too (the coefficients padded to eight), and decode bit for bit.
        let codec = try NumericCodec()
        let n = 3000, channels = 4
        var counts: [Int64] = []
        for ch in 0..<channels {
            var rng = SplitMix64(seed: 61 &+ UInt64(ch))
            var x1 = 0.0, x2 = 0.0
            counts += (0..<n).map { _ in
                let x = (1.5 - 0.1 * Double(ch)) * x1 - 0.8 * x2 + Double(rng.next() % 401) - 200
                (x2, x1) = (x1, x)
                return Int64(x.rounded())
            }
        }
        let segments = [Int](repeating: n, count: channels)
        for (type, payload) in [
            (ChunkElementType.int16, CodedCodecTests.bytes(counts.map { Int16($0) })),
            (.int32, CodedCodecTests.bytes(counts.map { Int32($0 * 300) })),
            (.float32, CodedCodecTests.bytes(counts.map { Float(Double($0) * 20.0 / 65536) })),
            (.float64, CodedCodecTests.bytes(counts.map { Double($0) * 20.0 / 65536 })),
        ] {
            let coded = try #require(
                CodedCodecTests.coded(
                    payload, type, segments: segments, codec: codec, capacity: NumericCodec.workingSize(elementCount: channels * n)))
            let size = coded.count
            // The first segment's predictor (§5.1): linear, of order 2 or 4.
            let header = NumericCodec.streamHeaderSize, orderAt = header + 8 + (type == .float32 || type == .float64 ? 16 : 0)
            #expect(
                coded[header + 5] == 3 && [2, 4].contains(coded[orderAt]),
                "\(type): predictor \(coded[header + 5]), order \(coded[orderAt])")
            let before = codec.laneSegments
            var back = [UInt8](repeating: 0xEE, count: payload.count)
            try coded.withUnsafeBytes { c in
                try back.withUnsafeMutableBytes {
                    try codec.decode(UnsafeRawBufferPointer(rebasing: c[..<size]), elementType: type, into: $0)
                }
            }
            #expect(back == payload, "\(type)")
            #expect(NumericCodec.lanes == 0 || codec.laneSegments - before == channels, "\(type)")
        }
    }

    /// Three tones and a little noise per channel: only the order-8 predictor cancels them, so the encoder chooses it.
    static func tones(_ n: Int, channel: Int, amplitude: Double, noise: Double, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed &+ UInt64(channel))
        return (0..<n).map { i in
            let t = Double(i)
            let u = Double(rng.next() >> 11) * 0x1p-53 - 0.5
            return amplitude * (0.5 * sin(0.31 * t + Double(channel)) + 0.3 * sin(0.77 * t) + 0.2 * sin(1.9 * t + 0.4)) + noise * u
        }
    }

    static func roundTrip(_ payload: [UInt8], _ type: ChunkElementType, segments: [Int], codec: NumericCodec) throws -> [UInt8] {
        var coded = [UInt8](repeating: 0, count: NumericCodec.workingSize(elementCount: segments.reduce(0, +)))
        let size = payload.withUnsafeBytes { p in
            coded.withUnsafeMutableBytes {
                codec.encode(p, elementType: type, segments: segments, into: $0.baseAddress!, capacity: $0.count)
            }
        }
        let stored = try #require(size)
        var back = [UInt8](repeating: 0xEE, count: payload.count)
        try coded.withUnsafeBytes { c in
            try back.withUnsafeMutableBytes {
                try codec.decode(UnsafeRawBufferPointer(rebasing: c[..<stored]), elementType: type, into: $0)
            }
        }
        return back
    }

    @Test(arguments: [1, 2, 3, 4, 5, 7, 8, 9])
    func streamsOfEveryChannelCountDecodeBitForBit(channels: Int) throws {
        let codec = try NumericCodec()
        let n = 3000
        let step = 20.0 / 65536
        var counts: [Int64] = []
        for ch in 0..<channels { counts += Self.tones(n, channel: ch, amplitude: 12_000, noise: 8, seed: 5).map { Int64($0.rounded()) } }
        let segments = [Int](repeating: n, count: channels)
        for (type, payload) in [
            (ChunkElementType.int16, CodedCodecTests.bytes(counts.map { Int16($0) })),
            (.int32, CodedCodecTests.bytes(counts.map { Int32($0 * 200) })),
            // A binary32 grid, converted by the kernel.
            (.float32, CodedCodecTests.bytes(counts.map { Float(Double($0) * step) })),
            // On a grid, written by the kernel, with a few −0.0 as exceptions.
            (.float64, CodedCodecTests.bytes(counts.enumerated().map { i, k in i % 500 == 7 ? -0.0 : Double(k) * step })),
            // DAQmx-style offset + gain × k, rounded: an adjustment block per segment (each lane its own).
            (.float64, CodedCodecTests.bytes(counts.map { -0.0123 + 3.0517578125e-4 * 1.0000003 * Double($0) })),
        ] {
            let before = codec.laneSegments
            #expect(try Self.roundTrip(payload, type, segments: segments, codec: codec) == payload, "\(type), \(channels) channels")
            // Every segment but a lone one (one channel, or the one after a full set of lanes) goes
            // with others, four or eight at a time.
            let single = NumericCodec.lanes > 0 && channels % NumericCodec.lanes == 1 ? 1 : 0
            #expect(codec.laneSegments - before == channels - single, "\(type), \(channels) channels")
        }
    }

    @Test func mixedSegmentsKeepTheirOrderAndPlaces() throws {
        let codec = try NumericCodec()
        let step = 20.0 / 65536
        // Order-8 channels of two lengths, a constant channel (no predictor) between them, and a
        // channel on a fine grid whose counts need 40 bits (order 8, but beyond the kernel's range).
        var values: [Double] = [], segments: [Int] = []
        func add(_ v: [Double]) { values += v; segments.append(v.count) }
        add(Self.tones(2000, channel: 0, amplitude: 9000, noise: 6, seed: 9).map { $0.rounded() * step })
        add(Self.tones(2000, channel: 1, amplitude: 9000, noise: 6, seed: 9).map { $0.rounded() * step })
        add([Double](repeating: 0.25, count: 2000))
        add(Self.tones(2000, channel: 2, amplitude: 9000, noise: 6, seed: 9).map { $0.rounded() * step })
        add(Self.tones(1500, channel: 3, amplitude: 9000, noise: 6, seed: 9).map { $0.rounded() * step })
        add(Self.tones(1500, channel: 4, amplitude: 9000, noise: 6, seed: 9).map { $0.rounded() * step })
        add(Self.tones(2000, channel: 5, amplitude: 0x1p39, noise: 64, seed: 9).map { $0.rounded() * 0x1p-40 })
        add(Self.tones(2000, channel: 6, amplitude: 0x1p39, noise: 64, seed: 9).map { $0.rounded() * 0x1p-40 })
        let payload = CodedCodecTests.bytes(values)
        #expect(try Self.roundTrip(payload, .float64, segments: segments, codec: codec) == payload)
        // The first two went together (the constant channel ends their wait), the fourth alone (the
        // next is shorter), the two 1 500-sample ones together; the 40-bit ones were undone one at a time.
        #expect(codec.laneSegments == 2 + 2)
    }
}
