import Foundation
import Testing

@testable import TributaryCapture

/// The encoder's radix sort of doubles (grid detection) against the standard library's sort.
struct RadixSortTests {
    private func radixSorted(_ values: [Double]) -> [Double] {
        var a = values
        let scratch = UnsafeMutablePointer<UInt64>.allocate(capacity: 2 * max(1, a.count))
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: RadixSort.countsSize)
        defer { scratch.deallocate(); counts.deallocate() }
        a.withUnsafeMutableBufferPointer { RadixSort.sort($0.baseAddress!, count: $0.count, scratch: scratch, counts: counts) }
        return a
    }

    @Test(arguments: [0, 1, 2, 3, 17, 255, 256, 257, 2048])
    func sortsLikeTheStandardLibrary(count: Int) {
        var generator = SystemRandomNumberGenerator()
        let specials: [Double] = [
            0, -0.0, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1, -1, .ulpOfOne,
        ]
        var values = (0..<count).map { i -> Double in
            switch i % 4 {
            case 0: return Double.random(in: -1...1, using: &generator)
            case 1: return Double(Int.random(in: -5...5, using: &generator)) * 0.25  // duplicates
            case 2: return specials[i % specials.count]
            // subnormal or zero, either sign
            default: return Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator) & ~(0x7FF << 52))
            }
        }
        values.shuffle(using: &generator)
        let ours = radixSorted(values)
        #expect(ours == values.sorted())  // == treats −0.0 and +0.0 as equal
        #expect(ours.map { $0.bitPattern }.sorted() == values.map { $0.bitPattern }.sorted())  // the same values
        // −0.0 before +0.0: ascending by the order-preserving key.
        #expect(zip(ours, ours.dropFirst()).allSatisfy { RadixSort.key($0) <= RadixSort.key($1) })
    }

    @Test func keysAreOrderPreservingAndInvertible() {
        let values: [Double] = [-.infinity, -1e300, -1, -.leastNonzeroMagnitude, -0.0, 0, .leastNonzeroMagnitude, 1, 1e300, .infinity]
        let keys = values.map(RadixSort.key)
        #expect(keys == keys.sorted() && Set(keys).count == keys.count)
        #expect(keys.map(RadixSort.value).map(\.bitPattern) == values.map(\.bitPattern))
    }
}
