import CFFTW
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How hard FFTW searches for a fast plan: more rigor costs planning time once per size.
public enum FFTRigor: Int, Sendable, CaseIterable, Comparable {
    /// A heuristic plan, made in microseconds.
    case estimate
    /// Times a few candidate algorithms (milliseconds to a second per size).
    case measure
    /// Times many more candidates (can take seconds per size); worth it with saved wisdom.
    case patient

    var flags: UInt32 {
        switch self {
        case .estimate: UInt32(FFTW_ESTIMATE)
        case .measure: UInt32(FFTW_MEASURE)
        case .patient: UInt32(FFTW_PATIENT)
        }
    }

    public static func < (a: FFTRigor, b: FFTRigor) -> Bool { a.rawValue < b.rawValue }

    /// Parses "estimate", "measure" or "patient".
    public init?(name: String) {
        switch name {
        case "estimate": self = .estimate
        case "measure": self = .measure
        case "patient": self = .patient
        default: return nil
        }
    }
}

/// The floating-point types FFTW transforms: `Double` (fftw_*) and `Float` (fftwf_*).
public protocol FFTScalar: BinaryFloatingPoint, Sendable {}
extension Double: FFTScalar {}
extension Float: FFTScalar {}

/// A failure of FFTW itself: a plan or wisdom operation it refused.
public struct FFTError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// An FFTW real-to-complex plan of one size and precision, made with buffers of FFTW's alignment.
///
/// Execution uses the new-array functions (`fftw_execute_dft_r2c`), which FFTW documents as
/// thread-safe, so one plan serves every thread as long as the arrays have the plan's alignment.
final class RealPlan: @unchecked Sendable {
    // @unchecked Sendable: the plan is immutable after creation; FFTW's new-array execute functions
    // may be called on one plan from many threads at once; destruction happens under the planner lock.
    let count: Int
    let isDouble: Bool
    let plan: OpaquePointer

    init(count: Int, isDouble: Bool, plan: OpaquePointer) {
        self.count = count
        self.isDouble = isDouble
        self.plan = plan
    }

    deinit {
        FFTPlanCache.plannerLock.withLock { _ in
            if isDouble { fftw_destroy_plan(plan) } else { fftwf_destroy_plan(plan) }
        }
    }
}

/// A process-wide cache of FFTW plans keyed by (size, precision, rigor).
///
/// FFTW's planner is not thread-safe, so every plan creation and every wisdom operation runs under
/// one lock; looking up an existing plan takes a second, short lock. A cached plan never goes away.
public final class FFTPlanCache: Sendable {
    /// The cache every transform in the process uses.
    public static let shared = FFTPlanCache()

    /// Serialises FFTW planner calls (plan creation/destruction, wisdom).
    static let plannerLock = Mutex<Void>(())

    private struct Key: Hashable {
        var count: Int
        var isDouble: Bool
        var rigor: FFTRigor
        var inverse = false
    }

    private let plans = Mutex<[Key: RealPlan]>([:])

    init() {}

    /// The number of plans made so far.
    public var planCount: Int { plans.withLock { $0.count } }

    /// A real-to-complex plan, or with `inverse` a complex-to-real (half-spectrum to signal, unnormalised) plan.
    func realPlan<T: FFTScalar>(count: Int, rigor: FFTRigor, of _: T.Type, inverse: Bool = false) throws -> RealPlan {
        precondition(T.self == Double.self || T.self == Float.self, "FFTScalar supports Double and Float only")
        let isDouble = T.self == Double.self
        // A plan of higher rigor for the same size serves a lower-rigor request just as well.
        for r in FFTRigor.allCases.reversed() where r >= rigor {
            if let plan = plans.withLock({ $0[Key(count: count, isDouble: isDouble, rigor: r, inverse: inverse)] }) { return plan }
        }
        guard count >= 1, count <= Int(Int32.max) - 2 else { throw FFTError("FFT length \(count) is out of range") }
        let key = Key(count: count, isDouble: isDouble, rigor: rigor, inverse: inverse)
        let made: RealPlan = try Self.plannerLock.withLock { _ in
            if let plan = plans.withLock({ $0[key] }) { return plan }
            let n = Int32(count)
            // Planning with MEASURE/PATIENT overwrites its arrays: plan on scratch buffers of FFTW's alignment.
            let plan: OpaquePointer?
            if isDouble, inverse {
                let input = fftw_alloc_complex(count / 2 + 1)!, output = fftw_alloc_real(count)!
                defer { fftw_free(input); fftw_free(output) }
                plan = fftw_plan_dft_c2r_1d(n, input, output, rigor.flags)
            } else if !isDouble, inverse {
                let input = fftwf_alloc_complex(count / 2 + 1)!, output = fftwf_alloc_real(count)!
                defer { fftwf_free(input); fftwf_free(output) }
                plan = fftwf_plan_dft_c2r_1d(n, input, output, rigor.flags)
            } else if isDouble {
                let input = fftw_alloc_real(count)!, output = fftw_alloc_complex(count / 2 + 1)!
                defer { fftw_free(input); fftw_free(output) }
                plan = fftw_plan_dft_r2c_1d(n, input, output, rigor.flags)
            } else {
                let input = fftwf_alloc_real(count)!, output = fftwf_alloc_complex(count / 2 + 1)!
                defer { fftwf_free(input); fftwf_free(output) }
                plan = fftwf_plan_dft_r2c_1d(n, input, output, rigor.flags)
            }
            guard let plan else { throw FFTError("FFTW could not plan a real transform of length \(count)") }
            let made = RealPlan(count: count, isDouble: isDouble, plan: plan)
            plans.withLock { $0[key] = made }
            return made
        }
        return made
    }

    /// Loads FFTW wisdom (for both precisions) saved by `saveWisdom`.
    /// - Parameter path: the wisdom file; the single-precision wisdom lives in `path + ".f"`.
    /// - Returns: true when the double-precision wisdom was read.
    @discardableResult
    public func loadWisdom(path: String) -> Bool {
        Self.plannerLock.withLock { _ in
            let ok = fftw_import_wisdom_from_filename(path) != 0
            _ = fftwf_import_wisdom_from_filename(path + ".f")
            return ok
        }
    }

    /// Saves the wisdom FFTW has gathered (plans of measure/patient rigor) so that later runs plan instantly.
    /// - Parameter path: the file to write; single precision goes to `path + ".f"`.
    /// - Throws: `FFTError` when FFTW cannot write the file.
    public func saveWisdom(path: String) throws {
        try Self.plannerLock.withLock { _ in
            guard fftw_export_wisdom_to_filename(path) != 0, fftwf_export_wisdom_to_filename(path + ".f") != 0 else {
                throw FFTError("cannot write FFTW wisdom to \(path)")
            }
        }
    }

    /// The wisdom gathered so far, as FFTW's text (double precision).
    public func wisdomText() -> String {
        Self.plannerLock.withLock { _ in
            guard let text = fftw_export_wisdom_to_string() else { return "" }
            defer { free(text) }
            return String(cString: text)
        }
    }

    /// Imports wisdom text produced by `wisdomText()`.
    /// - Returns: true when FFTW accepted it.
    @discardableResult
    public func importWisdom(text: String) -> Bool {
        Self.plannerLock.withLock { _ in fftw_import_wisdom_from_string(text) != 0 }
    }
}
