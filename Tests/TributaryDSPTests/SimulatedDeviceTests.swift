import Testing
import TributaryDSP
import TributaryWire

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
    @Test(arguments: ["id=1,channels=0", "id=1,channels=65535,rate=1000000", "id=1,channels=64,block=16777216",
                      "id=1,channels=4096,rate=100000000"])
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

    @Test func quantisedDevicesSendInt16Counts() throws {
        var device = SimulatedDevice(try SimulationSpec(parsing: "id=3,bits=12,range=5,channels=1,noise=0"))
        let view = try device.nextAnalogFrame(timestampNs: 0).analog()
        #expect(view.format == .int16 && view.scale(0) == 10.0 / 4096)
        #expect(view.values(channel: 0).allSatisfy { abs($0) <= 1 + 10.0 / 4096 })
    }
}
