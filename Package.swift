// swift-tools-version: 6.1
//
// Tributary: streaming, filtering, analysing and recording multichannel measurement data.
// The target list below is the architecture, from the bottom up: Bytes (the one reader and writer
// of little- and big-endian fields); Wire (frames) and Formats (file formats' bytes); DSP; Capture (the capture file); Interchange (every format's
// import and export); Transport (only a transport); Sources (what feeds a publisher); Analysis; View;
// the C API and the command-line tool as thin adapters on top. A module reaches down, never sideways
// or up. C is confined to thin system-library shims and kernels (Implementation details).
import PackageDescription

let package = Package(
    name: "Tributary",
    products: [
        .library(name: "TributaryWire", targets: ["TributaryWire"]),
        .library(name: "TributaryDSP", targets: ["TributaryDSP"]),
        .library(name: "TributaryFormats", targets: ["TributaryFormats"]),
        .library(name: "TributaryCapture", targets: ["TributaryCapture"]),
        .library(name: "TributaryInterchange", targets: ["TributaryInterchange"]),
        .library(name: "TributaryTransport", targets: ["TributaryTransport"]),
        .library(name: "TributarySources", targets: ["TributarySources"]),
        .library(name: "TributaryView", targets: ["TributaryView"]),
        /// The C interface (include/tributary.h): libTributaryC.so, whose SONAME is libtributary.so; `make lib`
        /// copies it to lib/libtributary.so (a product cannot share the name of the `tributary` executable).
        .library(name: "TributaryC", type: .dynamic, targets: ["TributaryC"]),
        .executable(name: "tributary", targets: ["tributary"]),
        .executable(name: "tributary-bench", targets: ["TributaryBenchmarks"]),
    ],
    targets: [
        // MARK: - Public API, bottom to top

        /// The one bounds-checked reader and writer of little- and big-endian fields (package-internal): the
        /// frame codec, the file formats, the capture file and the live view's update read and write through
        /// it, each mapping its neutral `ByteError` once into its own error. Pure Swift, no dependencies.
        .target(name: "TributaryBytes"),
        /// Frame format, encoder, zero-copy decoder, streaming decoder, frame filters. Pure Swift, no C.
        .target(name: "TributaryWire", dependencies: ["TributaryBytes"]),
        /// Text the tool, the C library and the live view write: a JSON value rendered so that numbers read
        /// back exactly, and text made safe for a terminal (package-internal). Pure Swift; bytes from TributaryBytes.
        .target(name: "TributaryText", dependencies: ["TributaryBytes"]),
        /// File formats of the measurement world as bytes: NPY, WAV, CSV, TDMS, XDF. Pure Swift; JSON text
        /// (an XDF marker sample of several channels) from TributaryText.
        .target(name: "TributaryFormats", dependencies: ["TributaryBytes", "TributaryText"]),
        /// Statistics, windows, FFT (FFTW), spectra, Welch, measurements, signal generators, analysis requests.
        .target(name: "TributaryDSP", dependencies: ["TributaryWire", "TributaryText", "CFFTW", "CKernels"]),
        /// Capture files: chunk codec (zstd frames, bit-shuffle, CRC32C), writer, reader, recovery, and the one
        /// windowed read of samples (`SampleWindow`: the C interface, Python and export). Knows no other file format.
        .target(
            name: "TributaryCapture",
            dependencies: [
                "CZstd", "CISAL", "CLinearPredictor", "CKernels", "CFileSync", "TributaryBytes", "TributaryWire",
            ]),
        /// Every format's import into and export from captures, behind one format type: NPY, CSV, WAV, TDMS,
        /// XDF (through TributaryFormats) and HDF5 (through libhdf5); the one export call of the tool, the C
        /// interface and Python.
        .target(name: "TributaryInterchange", dependencies: ["TributaryWire", "TributaryFormats", "TributaryCapture", "CHDF5"]),
        /// libzmq wrapper (ZMQ/), Publisher and Subject/Observer, discovery (Discovery/): only a transport
        /// (frames in, frames out), so a program that publishes or subscribes links neither the codec nor FFTW.
        .target(
            name: "TributaryTransport",
            dependencies: ["CMalloc", "CSocketControl", "CTimers", "TributaryBytes", "TributaryWire", "TributaryText", "CZMQ"]),
        /// What feeds a publisher: replays of captures, simulated devices, pipes (`serve --stdin`), sound cards
        /// (`serve --alsa`, through libasound) and programs publishing through C and Python (`PushSource`); each
        /// a `Source` plugged into the transport.
        .target(
            name: "TributarySources",
            dependencies: [
                "TributaryWire", "TributaryText", "TributaryDSP", "TributaryCapture", "TributaryTransport",
                "CAlsa",
            ]),
        /// The `analyze` pipeline shared by the tool and the C interface: input files to frames, one file's
        /// analysis, the JSON document and the table (package-internal API).
        .target(
            name: "TributaryAnalysis",
            dependencies: [
                "TributaryWire", "TributaryText", "TributaryDSP", "TributaryFormats", "TributaryCapture",
                "TributaryInterchange",
            ]),
        /// The live view: an HTTP/WebSocket server (CivetWeb) serving one embedded page, and the live model
        /// (min/max traces, Welch spectra, readings, link health) it streams to browsers and `monitor` prints.
        .target(
            name: "TributaryView",
            dependencies: [
                "TributaryBytes", "TributaryWire", "TributaryDSP", "TributaryTransport", "TributaryText",
                "CCivetWeb",
            ]),
        /// `@_cdecl` functions of the C interface declared in include/tributary.h: opaque handles, status codes
        /// and a per-thread error message; nothing Swift (no error, no trap) crosses the boundary. It checks
        /// and marshals; the work is the modules' below.
        .target(
            name: "TributaryC",
            dependencies: [
                "TributaryBytes", "TributaryWire", "TributaryText", "TributaryDSP", "TributaryCapture", "TributaryInterchange",
                "TributaryTransport", "TributaryAnalysis", "TributarySources", "CTributary",
            ],
            linkerSettings: [.unsafeFlags(["-Xlinker", "-soname=libtributary.so"])]),

        // MARK: - Command-line tool and benchmarks

        .executableTarget(
            name: "tributary",
            dependencies: [
                "TributaryWire", "TributaryDSP", "TributaryFormats", "TributaryCapture", "TributaryInterchange",
                "TributaryTransport", "TributarySources", "TributaryText", "TributaryAnalysis", "TributaryView",
            ]
        ),
        .executableTarget(
            name: "TributaryBenchmarks",
            dependencies: [
                "TributaryWire", "TributaryDSP", "TributaryFormats", "TributaryCapture", "TributaryTransport",
                "TributarySources", "CAllocCounter", "TributaryTestSupport",
            ],
            path: "Benchmarks/TributaryBenchmarks"
        ),

        // MARK: - Implementation details

        /// Counts malloc/free calls of the benchmark process (allocation guard).
        .target(name: "CAllocCounter", path: "Benchmarks/CAllocCounter"),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        /// libasound's PCM capture, for the sound-card source (TributarySources only).
        .systemLibrary(name: "CAlsa", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        // No pkgConfig: Debian's headers are in /usr/include/hdf5/serial (shim.h names the path), the library is hdf5_serial.
        .systemLibrary(name: "CHDF5", providers: [.apt(["libhdf5-dev"])]),
        // No pkgConfig: libzmq.pc adds -isystem flags that SwiftPM rejects; the headers are in /usr/include.
        .systemLibrary(name: "CZMQ", providers: [.apt(["libzmq3-dev"])]),
        // No pkgConfig: Debian ships no civetweb.pc; the header is in /usr/include.
        .systemLibrary(name: "CCivetWeb", providers: [.apt(["libcivetweb-dev"])]),
        /// include/tributary.h seen from Swift, so that the C interface takes its numbers (status codes) from
        /// the header that declares them.
        .systemLibrary(name: "CTributary"),
        /// glibc's mallopt (part of libc: nothing to install or link).
        .systemLibrary(name: "CMalloc"),
        /// The order-8 predictor's inverse four channels at a time (AVX2: binary64 FMAs where exact, fused
        /// with the binary64 grid conversion, else 64-bit integer lanes; chosen at run time), in C: Swift
        /// on Linux compiles for the baseline x86-64 and cannot target a function at AVX2.
        .target(name: "CLinearPredictor"),
        /// Hot loops that need instruction sets Swift cannot target (AVX-512, AVX2, BMI2, chosen at run
        /// time; portable loops elsewhere): the capture decoder's bin values and grid conversion, the
        /// Welch segment's mean, window and power. Each bit for bit its Swift rule (CodecKernelTests, SegmentKernelTests).
        .target(name: "CKernels"),
        /// Linux's sync_file_range (part of libc), for the capture writer's early writeback.
        .systemLibrary(name: "CFileSync"),
        .systemLibrary(name: "CSocketControl"),
        .systemLibrary(name: "CTimers"),

        // MARK: - Tests

        /// What the test targets share: a seeded generator, the repository's files, the fuzz corpora.
        .target(name: "TributaryTestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "TributaryBytesTests", dependencies: ["TributaryBytes"]),
        .testTarget(name: "TributaryWireTests", dependencies: ["TributaryWire", "TributaryTestSupport"]),
        .testTarget(name: "TributaryDSPTests", dependencies: ["TributaryDSP", "CFFTW", "CKernels", "TributaryTestSupport"]),
        .testTarget(name: "TributaryFormatsTests", dependencies: ["TributaryBytes", "TributaryFormats"]),
        // The fixtures are read by path (#filePath), not bundled as resources.
        .testTarget(
            name: "TributaryCaptureTests",
            dependencies: [
                "TributaryCapture", "TributaryInterchange", "TributaryFormats", "TributaryWire",
                "CaptureTorture", "CLinearPredictor", "CKernels", "TributaryTestSupport",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "TributaryTransportTests",
            dependencies: [
                "TributaryTransport", "TributarySources", "TributaryWire", "TributaryDSP", "TributaryCapture",
                "TransportPeer", "CSocketControl", "TributaryTestSupport",
            ]),
        .testTarget(name: "TributaryViewTests", dependencies: ["TributaryView", "TributaryDSP", "TributaryTransport"]),
        /// The command-line tool's option tables, error table and help, against docs/CLI.md.
        .testTarget(
            name: "TributaryCLITests",
            dependencies: ["tributary", "TributaryTestSupport", "TributaryInterchange", "TributaryCapture", "TributaryWire"]),

        // MARK: - Test helpers (real processes the tests and benchmarks kill, stop and resume)

        /// Records a synthetic stream until killed (the crash-recovery test SIGKILLs it).
        .executableTarget(name: "CaptureTorture", dependencies: ["TributaryCapture"], path: "Tests/CaptureTorture"),
        /// A publisher or subscriber in its own process (killed mid-stream, SIGSTOPped).
        .executableTarget(
            name: "TransportPeer", dependencies: ["TributaryTransport", "TributarySources", "TributaryWire", "TributaryDSP"],
            path: "Tests/TransportPeer"),
    ],
    swiftLanguageModes: [.v6]
)
