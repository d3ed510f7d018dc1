// swift-tools-version: 6.1
//
// Tributary: streaming, filtering, analysing and recording multichannel measurement data.
// The target list below is the architecture: pure-Swift cores first, C confined to thin
// system-library shims at the bottom, the command-line tool and benchmarks on top.
import PackageDescription

let package = Package(
    name: "Tributary",
    products: [
        .library(name: "TributaryWire", targets: ["TributaryWire"]),
        .library(name: "TributaryFormats", targets: ["TributaryFormats"]),
        .library(name: "TributaryDSP", targets: ["TributaryDSP"]),
        .executable(name: "tributary", targets: ["tributary"]),
        .executable(name: "tributary-bench", targets: ["TributaryBenchmarks"]),
    ],
    targets: [
        // MARK: - Public API

        /// Frame format, encoder, zero-copy decoder, streaming decoder. Pure Swift, no C.
        .target(name: "TributaryWire"),
        /// File formats of the measurement world (NPY; later WAV, CSV). Pure Swift, no dependencies.
        .target(name: "TributaryFormats"),
        /// Statistics, windows, FFT (FFTW), spectra, Welch, measurements, signal generators, analysis requests.
        .target(name: "TributaryDSP", dependencies: ["CFFTW"]),

        // MARK: - Command-line tool and benchmarks

        .executableTarget(
            name: "tributary",
            dependencies: ["TributaryWire", "TributaryDSP", "TributaryFormats"]
        ),
        .executableTarget(
            name: "TributaryBenchmarks",
            dependencies: ["TributaryWire", "TributaryDSP", "CAllocCounter"],
            path: "Benchmarks/TributaryBenchmarks"
        ),

        // MARK: - Implementation details

        /// Counts malloc/free calls of the benchmark process (allocation guard).
        .target(name: "CAllocCounter", path: "Benchmarks/CAllocCounter"),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CZMQ", pkgConfig: "libzmq", providers: [.apt(["libzmq3-dev"])]),

        // MARK: - Tests

        .testTarget(name: "TributaryWireTests", dependencies: ["TributaryWire"]),
        .testTarget(name: "TributaryFormatsTests", dependencies: ["TributaryFormats"]),
        .testTarget(name: "TributaryDSPTests", dependencies: ["TributaryDSP", "CFFTW"]),
    ],
    swiftLanguageModes: [.v6]
)
