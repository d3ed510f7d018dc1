import CHDF5
import Foundation

/// H5P_DEFAULT (imported as Int32; hid_t is 64-bit).
let h5pDefault: hid_t = 0

/// A failed libhdf5 call, naming the file and the operation.
public struct HDF5Error: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var reason: String
    public var description: String { "\(file): \(reason)" }
}

/// A thin, closing wrapper over the HDF5 C library (Debian's libhdf5 1.10): what the capture
/// mapping needs — groups, chunked and deflate-compressed datasets, and attributes — and no more.
final class HDF5Object {
    let id: hid_t
    private let closer: (hid_t) -> herr_t
    let file: String

    init(_ id: hid_t, file: String, what: @autoclosure () -> String, closer: @escaping (hid_t) -> herr_t) throws(HDF5Error) {
        guard id >= 0 else { throw HDF5Error(file: file, reason: what()) }
        self.id = id
        self.file = file
        self.closer = closer
    }

    deinit { _ = closer(id) }

    private static let initialised: Bool = {
        H5open()
        chdf5_silence()
        return true
    }()

    static func create(path: String) throws(HDF5Error) -> HDF5Object {
        _ = initialised
        return try HDF5Object(
            H5Fcreate(path, chdf5_acc_trunc(), h5pDefault, h5pDefault), file: path, what: "cannot create the HDF5 file", closer: H5Fclose)
    }

    static func open(path: String) throws(HDF5Error) -> HDF5Object {
        _ = initialised
        return try HDF5Object(H5Fopen(path, chdf5_acc_rdonly(), h5pDefault), file: path, what: "cannot open as HDF5", closer: H5Fclose)
    }

    /// Groups and datasets carry no access/modification/change/birth times (libhdf5 records them by
    /// default), so that exporting the same capture twice gives the same bytes.
    /// With `attributeOrder`, the group keeps the order in which its attributes were created (read
    /// back by `attributeNames`).
    func createGroup(_ name: String, attributeOrder: Bool = false) throws(HDF5Error) -> HDF5Object {
        let plist = try HDF5Object(H5Pcreate(chdf5_group_create()), file: file, what: "property list of group '\(name)'", closer: H5Pclose)
        _ = H5Pset_obj_track_times(plist.id, false)
        if attributeOrder { _ = chdf5_track_attribute_order(plist.id) }
        return try HDF5Object(
            H5Gcreate2(id, name, h5pDefault, plist.id, h5pDefault), file: file, what: "cannot create group '\(name)'", closer: H5Gclose)
    }

    /// A dataset of `dims` elements of `type` from `bytes` (C order), chunked (rows of at most 64 Ki
    /// samples) and compressed with shuffle + deflate level 4.
    func writeDataset(_ name: String, type: hid_t, dims: [Int], bytes: UnsafeRawBufferPointer, compress: Bool = true) throws(HDF5Error)
        -> HDF5Object
    {
        var d = dims.map { hsize_t($0) }
        let space = try HDF5Object(H5Screate_simple(Int32(d.count), &d, nil), file: file, what: "dataspace of '\(name)'", closer: H5Sclose)
        let plist = try HDF5Object(H5Pcreate(chdf5_dataset_create()), file: file, what: "property list of '\(name)'", closer: H5Pclose)
        _ = H5Pset_obj_track_times(plist.id, false)
        if compress, dims.allSatisfy({ $0 > 0 }) {
            var chunk = d
            for k in 0..<(chunk.count - 1) { chunk[k] = 1 }
            chunk[chunk.count - 1] = min(chunk[chunk.count - 1], 65_536)
            _ = H5Pset_chunk(plist.id, Int32(chunk.count), &chunk)
            _ = H5Pset_shuffle(plist.id)
            _ = H5Pset_deflate(plist.id, 4)
        }
        let dataset = try HDF5Object(
            H5Dcreate2(id, name, type, space.id, h5pDefault, plist.id, h5pDefault), file: file,
            what: "cannot create dataset '\(name)'", closer: H5Dclose)
        if bytes.count > 0 {
            guard H5Dwrite(dataset.id, type, H5S_ALL_ID, H5S_ALL_ID, h5pDefault, bytes.baseAddress) >= 0 else {
                throw HDF5Error(file: file, reason: "cannot write dataset '\(name)'")
            }
        }
        return dataset
    }

    private var H5S_ALL_ID: hid_t { 0 }

    // MARK: Attributes

    private func attribute(_ name: String, type: hid_t, count: Int?, _ write: (hid_t) -> herr_t) throws(HDF5Error) {
        if H5Aexists(id, name) > 0 { _ = H5Adelete(id, name) }
        let space: HDF5Object
        if let count {
            var d = [hsize_t(count)]
            space = try HDF5Object(H5Screate_simple(1, &d, nil), file: file, what: "attribute space", closer: H5Sclose)
        } else {
            space = try HDF5Object(H5Screate(H5S_SCALAR), file: file, what: "attribute space", closer: H5Sclose)
        }
        let a = try HDF5Object(
            H5Acreate2(id, name, type, space.id, h5pDefault, h5pDefault), file: file, what: "cannot create attribute '\(name)'",
            closer: H5Aclose)
        guard write(a.id) >= 0 else { throw HDF5Error(file: file, reason: "cannot write attribute '\(name)'") }
    }

    private func stringType() throws(HDF5Error) -> HDF5Object {
        let t = try HDF5Object(H5Tcopy(chdf5_c_s1()), file: file, what: "string type", closer: H5Tclose)
        _ = H5Tset_size(t.id, chdf5_variable())
        _ = H5Tset_cset(t.id, H5T_CSET_UTF8)
        return t
    }

    func setAttribute(_ name: String, _ value: String) throws(HDF5Error) {
        try setAttribute(name, strings: [value], scalar: true)
    }

    func setAttribute(_ name: String, strings: [String], scalar: Bool = false) throws(HDF5Error) {
        let t = try stringType()
        let c = strings.map { strdup($0) }
        defer { c.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = c.map { UnsafePointer($0) }
        try attribute(name, type: t.id, count: scalar ? nil : strings.count) { a in H5Awrite(a, t.id, &pointers) }
    }

    func setAttribute(_ name: String, doubles: [Double], scalar: Bool = false) throws(HDF5Error) {
        var v = doubles
        try attribute(name, type: chdf5_native_double(), count: scalar ? nil : v.count) { a in H5Awrite(a, chdf5_native_double(), &v) }
    }

    func setAttribute(_ name: String, int64s: [Int64], scalar: Bool = false) throws(HDF5Error) {
        var v = int64s
        try attribute(name, type: chdf5_native_int64(), count: scalar ? nil : v.count) { a in H5Awrite(a, chdf5_native_int64(), &v) }
    }

    func setAttribute(_ name: String, uint32s: [UInt32], scalar: Bool = false) throws(HDF5Error) {
        var v = uint32s
        try attribute(name, type: chdf5_native_uint32(), count: scalar ? nil : v.count) { a in H5Awrite(a, chdf5_native_uint32(), &v) }
    }

    /// An attribute's value: strings (variable or fixed length) or numbers as float64; nil when absent.
    func attribute(_ name: String) -> HDF5Value? {
        guard H5Aexists(id, name) > 0 else { return nil }
        let a = H5Aopen(id, name, h5pDefault)
        guard a >= 0 else { return nil }
        defer { H5Aclose(a) }
        let t = H5Aget_type(a), s = H5Aget_space(a)
        defer { H5Tclose(t); H5Sclose(s) }
        let points = H5Sget_simple_extent_npoints(s)
        guard points >= 0, let n = Self.readableCount([hsize_t(max(1, points))], elementSize: 8, storedBytes: H5Aget_storage_size(a)) else {
            return nil
        }
        switch H5Tget_class(t) {
        case H5T_STRING:
            if H5Tis_variable_str(t) > 0 {
                let mem = H5Tcopy(chdf5_c_s1())
                _ = H5Tset_size(mem, chdf5_variable())
                _ = H5Tset_cset(mem, H5Tget_cset(t))
                defer { H5Tclose(mem) }
                var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: n)
                guard H5Aread(a, mem, &pointers) >= 0 else { return nil }
                let out = pointers.map { $0.map { String(cString: $0) } ?? "" }
                _ = H5Dvlen_reclaim(mem, s, h5pDefault, &pointers)
                return .strings(out)
            }
            let size: Int = H5Tget_size(t)
            let (total, overflow) = size.multipliedReportingOverflow(by: n)
            guard size > 0, !overflow, total < 1 << 30 else { return nil }
            var bytes = [UInt8](repeating: 0, count: total + 1)
            guard H5Aread(a, t, &bytes) >= 0 else { return nil }
            var out: [String] = []
            for k in 0..<n {
                let field: ArraySlice<UInt8> = bytes[(k * size)..<((k + 1) * size)]
                out.append(String(decoding: field.prefix { $0 != 0 }, as: UTF8.self))
            }
            return .strings(out)
        case H5T_INTEGER, H5T_FLOAT:
            var v = [Double](repeating: 0, count: n)
            guard H5Aread(a, chdf5_native_double(), &v) >= 0 else { return nil }
            return .numbers(v)
        default:
            return nil
        }
    }

    // MARK: Reading

    /// The names of the object's attributes, in creation order when the object keeps it, else in
    /// name order; at most `limit` of them (nil past it: more attributes than the caller accepts).
    func attributeNames(limit: Int) -> [String]? {
        var names: [String] = []
        for order in [H5_INDEX_CRT_ORDER, H5_INDEX_NAME] {
            names = []
            var n: hsize_t = 0
            while true {
                let length = H5Aget_name_by_idx(id, ".", order, H5_ITER_INC, n, nil, 0, h5pDefault)
                guard length >= 0 else { break }
                guard names.count < limit else { return nil }
                var buffer = [CChar](repeating: 0, count: Int(length) + 1)
                guard H5Aget_name_by_idx(id, ".", order, H5_ITER_INC, n, &buffer, buffer.count, h5pDefault) >= 0 else { break }
                names.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                n += 1
            }
            if n > 0 || order == H5_INDEX_NAME { break }
        }
        return names
    }

    /// The paths of every dataset in the file, depth first in name order.
    func datasetPaths() -> [String] {
        final class Box { var names: [String] = [] }
        var out: [String] = []
        func visit(_ group: hid_t, prefix: String) {
            let box = Box()
            var index: hsize_t = 0
            _ = withUnsafeMutablePointer(to: &index) { ip in
                H5Literate(
                    group, H5_INDEX_NAME, H5_ITER_INC, ip,
                    { _, name, _, data in
                        Unmanaged<Box>.fromOpaque(data!).takeUnretainedValue().names.append(String(cString: name!))
                        return 0
                    }, Unmanaged.passUnretained(box).toOpaque())
            }
            for name in box.names {
                let o = H5Oopen(group, name, h5pDefault)
                guard o >= 0 else { continue }
                defer { H5Oclose(o) }
                switch H5Iget_type(o) {
                case H5I_DATASET: out.append(prefix + name)
                case H5I_GROUP: visit(o, prefix: prefix + name + "/")
                default: break
                }
            }
        }
        visit(id, prefix: "/")
        return out
    }

    func openDataset(_ path: String) throws(HDF5Error) -> HDF5Object {
        try HDF5Object(H5Dopen2(id, path, h5pDefault), file: file, what: "cannot open dataset '\(path)'", closer: H5Dclose)
    }

    func openGroup(_ path: String) throws(HDF5Error) -> HDF5Object {
        try HDF5Object(H5Gopen2(id, path, h5pDefault), file: file, what: "cannot open group '\(path)'", closer: H5Gclose)
    }

    /// The element count of `dims` when values of `elementSize` bytes each can be read into memory:
    /// nil when the count does not fit an Int, or when the values would take more than the machine's
    /// memory, or more than 64 MiB and more than 1100 times the `storedBytes` the file holds for them
    /// (deflate, the filter written here and by h5py, compresses at most about 1032:1). The
    /// dimensions are numbers in the file: they are checked before anything is allocated.
    /// `streamed`: the values are read a window at a time (`readWindow`), so the machine's memory is no bound.
    static func readableCount(_ dims: [hsize_t], elementSize: Int, storedBytes: hsize_t, streamed: Bool = false) -> Int? {
        var n = 1
        for d in dims {
            guard let d = Int(exactly: d) else { return nil }
            let (product, overflow) = n.multipliedReportingOverflow(by: d)
            guard !overflow else { return nil }
            n = product
        }
        let (bytes, overflow) = n.multipliedReportingOverflow(by: elementSize)
        guard !overflow else { return nil }
        let (expanded, big) = Int(clamping: storedBytes).multipliedReportingOverflow(by: 1100)
        guard bytes <= max(64 << 20, big ? .max : expanded), streamed || UInt64(bytes) <= ProcessInfo.processInfo.physicalMemory else {
            return nil
        }
        return n
    }

    /// A dataset's shape and values: int16 and int32 kept as they are, float32 as float32, other numbers as float64;
    /// nil for non-numeric datasets.
    /// - Throws: `HDF5Error` when its dimensions cannot be read into memory (`readableCount`).
    func readNumbers() throws(HDF5Error) -> (dims: [Int], data: HDF5Data)? {
        guard let (shape, kind) = numericType() else { return nil }
        guard let n = Self.readableCount(shape, elementSize: kind.memorySize, storedBytes: H5Dget_storage_size(id)) else {
            throw HDF5Error(
                file: file,
                reason: "dataset of shape (\(shape.map { "\($0)" }.joined(separator: ", "))) with \(H5Dget_storage_size(id)) bytes stored: "
                    + "its values cannot be what the file holds, or do not fit in memory")
        }
        let dims = shape.map { Int($0) }  // each fits: their product does
        func read<T: BitwiseCopyable>(_ zero: T, _ type: hid_t) -> [T]? {
            var v = [T](repeating: zero, count: n)
            let status = v.withUnsafeMutableBytes { H5Dread(id, type, 0, 0, h5pDefault, $0.baseAddress) }
            return n == 0 || status >= 0 ? v : nil
        }
        switch kind {
        case .int16: return read(Int16(0), chdf5_native_int16()).map { (dims, .int16($0)) }
        case .int32: return read(Int32(0), chdf5_native_int32()).map { (dims, .int32($0)) }
        case .float32: return read(Float(0), chdf5_native_float()).map { (dims, .float32($0)) }
        case .float64: return read(Double(0), chdf5_native_double()).map { (dims, .float64($0)) }
        }
    }
}

extension HDF5Object {
    /// An integer dataset read exactly as int64.
    func readInt64s() -> [Int64]? {
        let s = H5Dget_space(id), t = H5Dget_type(id)
        defer { H5Sclose(s); H5Tclose(t) }
        guard H5Tget_class(t) == H5T_INTEGER else { return nil }
        let points = H5Sget_simple_extent_npoints(s)
        guard points >= 0, let n = Self.readableCount([hsize_t(points)], elementSize: 8, storedBytes: H5Dget_storage_size(id)) else {
            return nil
        }
        var v = [Int64](repeating: 0, count: n)
        guard n == 0 || H5Dread(id, chdf5_native_int64(), 0, 0, h5pDefault, &v) >= 0 else { return nil }
        return v
    }

    /// A scalar integer attribute read exactly as int64.
    func int64Attribute(_ name: String) -> Int64? {
        guard H5Aexists(id, name) > 0 else { return nil }
        let a = H5Aopen(id, name, h5pDefault)
        guard a >= 0 else { return nil }
        defer { H5Aclose(a) }
        let t = H5Aget_type(a)
        defer { H5Tclose(t) }
        guard H5Tget_class(t) == H5T_INTEGER else { return nil }
        var v: Int64 = 0
        guard H5Aread(a, chdf5_native_int64(), &v) >= 0 else { return nil }
        return v
    }
}

enum HDF5Value {
    case strings([String])
    case numbers([Double])

    var string: String? { if case .strings(let s) = self { s.first } else { nil } }
    var strings: [String]? { if case .strings(let s) = self { s } else { nil } }
    var number: Double? { if case .numbers(let v) = self { v.first } else { nil } }
    var numbers: [Double]? { if case .numbers(let v) = self { v } else { nil } }
}

enum HDF5Data {
    case float64([Double])
    case float32([Float])
    case int16([Int16])
    case int32([Int32])
}
