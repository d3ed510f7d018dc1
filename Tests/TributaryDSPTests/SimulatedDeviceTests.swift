import Foundation
import Testing
import TributaryWire

@testable import TributaryDSP

@Suite struct SimulatedDeviceTests {
    @Test func parsesTheDocumentedSpec() throws {
        let spec = try SimulationSpec(parsing: "id=1,name=USB-6009,rate=10000,channels=4,freq=50,amp=1,noise=0.01")
        #expect(spec.id == 1 && spec.name == "USB-6009" && spec.rate == 10000 && spec.channels == 4)
        #expect(spec.frequency == 50 && spec.amplitude == 1 && spec.noise == 0.01 && spec.bits == nil)
        #expect(spec.samplesPerFrame == 1000)
        let quantised = try SimulationSpec(parsing: "id=2,bits=16,block=256,harmonics=0.01;0.005,wave=sine,lines=2")
        #expect(quantised.bits == 16 && quantised.samplesPerFrame == 256 && quantised.harmonics == [0.01, 0.005])
    }

    @Test(arguments: ["name=x", "id=0", "id=1,rate=-5", "id=1,bogus=3", "id=1,wave=noise", "id=1,bits=17", "id=1,id=2", "id=1,channels"])
    func badSpecsSayWhat(text: String) {
        #expect(throws: SimulationSpecError.self) { try SimulationSpec(parsing: text) }
    }

    /// Devices that produce nothing, or frames no peer may receive (the format's 64 MiB limit; this
    /// one used to abort allocating 52 GB), or more samples than can be generated in real time.
    @Test(arguments: [
        "id=1,channels=0", "id=1,channels=65535,rate=1000000", "id=1,channels=64,block=16777216",
        "id=1,channels=4096,rate=100000000",
    ])
    func devicesBeyondTheFormatOrTheMachineAreRefused(text: String) throws {
        let error = try #require(throws: SimulationSpecError.self) { try SimulationSpec(parsing: text) }
        #expect(error.message.contains("channels"))
    }

    @Test func theLargestFrameTheFormatAllowsIsAccepted() throws {
        // 7 channels x 1 Mi float64 samples: 56 MiB, one frame within the 64 MiB limit.
        let spec = try SimulationSpec(parsing: "id=1,channels=7,block=1048576")
        #expect(spec.channels * spec.samplesPerFrame * 8 < 64 << 20)
    }

    @Test func channelsCarryTheirFrequenciesContinuously() throws {
        var spec = try SimulationSpec(parsing: "id=7,rate=1000,channels=3,freq=10,amp=2,noise=0,block=333")
        spec.seed = 1
        var device = SimulatedDevice(spec)
        let analysis = FrameAnalysis(request: AnalysisRequest(statistics: true, measurements: [.tone]))
        try analysis.add(device.configurationFrame())
        for i in 0..<12 { try analysis.add(device.nextAnalogFrame(timestampNs: Int64(i), sequence: UInt64(i))) }
        let source = try analysis.finish()[0]
        #expect(source.discontinuities == 0 && source.sampleRate == 1000)
        for (k, channel) in source.channels.enumerated() {
            let tone = try #require(channel.tone)
            #expect(abs(tone.frequency - 10 * Double(k + 1)) < 0.01)
            #expect(abs(tone.amplitude - 2) < 1e-3)
        }
    }

    /// The phasor sines equal libm's at every sample, in any blocks, from any start, with harmonics,
    /// across the exact restarts; the other waves are computed as before, exactly.
    @Test(arguments: [
        "id=1,rate=48000,channels=3,freq=997,amp=3,noise=0,harmonics=0.1;0.01;0.001",
        "id=2,rate=1e8,channels=1,freq=12345678.9,amp=1,noise=0,block=4096",
        "id=3,rate=10,channels=2,freq=4.99,amp=0.5,noise=0",
        "id=4,rate=1000,channels=2,freq=50,noise=0,wave=triangle",
        "id=5,rate=1000,channels=2,freq=50,noise=0,wave=square",
    ])
    func fastValuesAreTheDefinition(text: String) throws {
        let device = SimulatedDevice(try SimulationSpec(parsing: text))
        let exact = device.spec.wave != .sine
        for (first, count) in [(0, 1), (0, 3), (5, 4_099), (1_000_003, 2_050), (987_654_321_000, 1_031)] {
            var values = [Double](repeating: .nan, count: count)
            for k in 0..<device.spec.channels {
                values.withUnsafeMutableBufferPointer { device.writeClean(channel: k, first: UInt64(first), into: $0) }
                for (i, value) in values.enumerated() {
                    let expected = device.clean(channel: k, sample: UInt64(first + i))
                    if exact {
                        #expect(value == expected)
                    } else {
                        // The definition's own phase is f × (n / rate) rounded: far from n = 0 its ulp,
                        // not the phasor, bounds how closely any two ways of computing it agree.
                        let top = device.spec.frequency * Double(k + 1) * Double(device.spec.harmonics.count + 1)
                        let tolerance = device.spec.amplitude * (1.5e-12 + 8 * .pi * (top * (Double(first + i) / device.spec.rate)).ulp)
                        #expect(abs(value - expected) <= tolerance, "\(text) channel \(k) sample \(first + i)")
                    }
                }
            }
        }
    }

    @Test func quantisedDevicesSendInt16Counts() throws {
        var device = SimulatedDevice(try SimulationSpec(parsing: "id=3,bits=12,range=5,channels=1,noise=0"))
        let view = try device.nextAnalogFrame(timestampNs: 0).analog()
        #expect(view.format == .int16 && view.scale(0) == 10.0 / 4096)
        #expect(view.values(channel: 0).allSatisfy { abs($0) <= 1 + 10.0 / 4096 })
    }
}
