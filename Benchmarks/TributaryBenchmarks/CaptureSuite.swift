import Foundation
import TributaryCapture
import TributaryWire

/// End-to-end capture throughput on the compression suite's data set (8 ch × 1M ADC samples, as
/// frames of 8 × 1000 samples): CaptureWriter with 2 compression threads against 1 (the "peer"
/// column), bit-shuffle on against off, and CaptureReader decoding every frame. MB/s count frame bytes.
let captureSuite = Suite(
    name: "capture",
    run: { context in
        let data = ADCDataSet()
        let n = ADCDataSet.samples, perFrame = 1000
        func frames(_ format: SampleFormat) -> [Frame] {
            stride(from: 0, to: n - perFrame, by: perFrame).enumerated().map { (i, first) in
                let samples: AnalogSamples
                var slice: [Int16] = []
                slice.reserveCapacity(8 * perFrame)
                for c in 0..<ADCDataSet.channels { slice.append(contentsOf: data.counts[(c * n + first)..<(c * n + first + perFrame)]) }
                switch format {
                case .int16:
                    samples = .int16(
                        counts: slice, scale: Array(repeating: ADCDataSet.step, count: 8), offset: Array(repeating: 0, count: 8))
                default: samples = .float64(slice.map { Double($0) * ADCDataSet.step })
                }
                return Frame(
                    encoding: .analog(
                        AnalogData(channelIndexes: Array(0..<8), sampleCount: perFrame, firstSample: UInt64(first), samples: samples)),
                    sequence: UInt64(i), timestampNs: Int64(Double(first) / 51_200 * 1e9), sourceID: 1)
            }
        }
        let path = context.scratchDirectory + "/bench.tcap"
        var rows: [BenchRow] = []
        for (name, format) in [("float64 ADC", SampleFormat.float64), ("int16", SampleFormat.int16)] {
            let input = frames(format)
            let bytes = Double(input.reduce(0) { $0 + $1.header.frameLength })
            func write(threads: Int, shuffle: Bool = true) -> Int {
                let options = CaptureWriterOptions(
                    chunk: ChunkOptions(bitShuffle: shuffle), compressionThreads: threads, fsync: .none, checkpointInterval: 0)
                let writer = try! CaptureWriter(path: path, options: options)
                for f in input { try! writer.append(f) }
                return try! writer.close().fileBytes
            }
            let rawFloat64 = Double(ADCDataSet.channels * n * 8)
            let one = measure(repetitions: 5, warmup: 1) { _ = write(threads: 1) }
            let two = measure(repetitions: 5, warmup: 1) { _ = write(threads: 2) }
            let fileBytes = Double(write(threads: 2))
            let noShuffleBytes = Double(write(threads: 2, shuffle: false))
            let noShuffle = measure(repetitions: 3, warmup: 1) { _ = write(threads: 2, shuffle: false) }
            _ = write(threads: 2)
            let read = measure(repetitions: 5, warmup: 1) {
                let reader = try! CaptureReader(path: path)
                var count = 0
                reader.forEachFrame { count += $0.header.frameLength }
                blackHole(count)
            }
            rows.append(
                BenchRow(
                    name: "\(name): write MB/s, 2 threads vs 1", tributary: fmt(bytes / two * 1e3, 0), peer: fmt(bytes / one * 1e3, 0),
                    ratio: fmt(one / two)))
            rows.append(
                BenchRow(
                    name: "\(name): ratio frames/file (vs raw float64)", tributary: fmt(bytes / fileBytes),
                    peer: fmt(rawFloat64 / fileBytes), ratio: "-"))
            rows.append(
                BenchRow(
                    name: "\(name): bit-shuffle on vs off, ratio", tributary: fmt(bytes / fileBytes), peer: fmt(bytes / noShuffleBytes),
                    ratio: fmt(noShuffleBytes / fileBytes)))
            rows.append(
                BenchRow(
                    name: "\(name): bit-shuffle on vs off, write MB/s", tributary: fmt(bytes / two * 1e3, 0),
                    peer: fmt(bytes / noShuffle * 1e3, 0), ratio: fmt(noShuffle / two)))
            rows.append(
                BenchRow(name: "\(name): read+decode MB/s (one thread)", tributary: fmt(bytes / read * 1e3, 0), peer: "-", ratio: "-"))
        }
        // Opening a crashed writer's file (no footer): through the checkpoint chain vs a scan of every record.
        let input = frames(.float64)
        func crashed(checkpoints: Bool) -> String {
            let options = CaptureWriterOptions(compressionThreads: 2, fsync: .none, checkpointInterval: checkpoints ? 1e-9 : 0)
            let writer = try! CaptureWriter(path: path, options: options)
            for f in input { try! writer.append(f) }
            try! writer.flush()
            writer.abandon()
            let partial = path + (checkpoints ? ".checkpoints" : ".scan")
            rename(writer.partialPath, partial)
            return partial
        }
        let withCheckpoints = crashed(checkpoints: true), without = crashed(checkpoints: false)
        let openCheckpoints = measure(repetitions: 5, warmup: 1) { blackHole(try! CaptureReader(path: withCheckpoints).index.count) }
        let openScan = measure(repetitions: 5, warmup: 1) { blackHole(try! CaptureReader(path: without).index.count) }
        rows.append(
            BenchRow(
                name: "float64 ADC: open without footer, ms (checkpoints vs scan)", tributary: fmt(openCheckpoints / 1e6, 2),
                peer: fmt(openScan / 1e6, 2), ratio: fmt(openScan / openCheckpoints)))
        unlink(withCheckpoints)
        unlink(without)
        unlink(path)
        printTable("capture write/read (8 ch x 1M, frames of 8 x 1000; peer = 1 thread or shuffle off)", rows)
    })
