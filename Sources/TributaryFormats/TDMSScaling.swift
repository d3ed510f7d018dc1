// NI scaling properties of a TDMS channel, as DAQmx and LabVIEW write them: NI_Scaling_Status
// ("unscaled" or "scaled"), NI_Number_Of_Scales = N and scales NI_Scale[0] ... NI_Scale[N-1], the
// last giving the channel's values. A scale's input is another scale (by index) or, with input
// source 0xFFFFFFFF, the channel's raw data; a scale without NI_Scale[k]_Scale_Type is DAQmx scaler k
// (the scaler whose scale id is k). Linear, Polynomial, Add, Subtract and AdvancedAPI (no change)
// scales are applied; other types (RTD, Strain, Table, Thermistor, Thermocouple) are refused by name.

/// Applies a channel's NI scales (channel properties only).
public enum TDMSScaling {
    /// Why a channel's scaling cannot be applied.
    public struct Failure: Error, Sendable, Equatable {
        public var reason: String
    }

    /// The input source that means the channel's raw data.
    static let rawInput: UInt32 = 0xFFFF_FFFF
    /// At most this many scales: DAQmx writes a handful.
    static let maxScales = 1024

    enum Scale: Equatable {
        case scaler(UInt32)
        case linear(slope: Double, intercept: Double, input: UInt32)
        case polynomial([Double], input: UInt32)
        case add(UInt32, UInt32)
        case subtract(UInt32, UInt32)
        case same(UInt32)
    }

    private static func value(_ p: [TDMSProperty], _ name: String) -> TDMSValue? { p.last { $0.name == name }?.value }

    private static func number(_ p: [TDMSProperty], _ name: String) throws(Failure) -> Double {
        guard let v = value(p, name)?.number, v.isFinite else { throw Failure(reason: "\(name) is missing or not a finite number") }
        return v
    }

    /// A count or index property: a whole number in 0...limit.
    private static func whole(_ p: [TDMSProperty], _ name: String, limit: Double) throws(Failure) -> Int {
        let v = try number(p, name)
        guard v >= 0, v <= limit, v == v.rounded() else { throw Failure(reason: "\(name) is \(v), not a whole number 0...\(Int(limit))") }
        return Int(v)
    }

    private static func input(_ p: [TDMSProperty], _ name: String) throws(Failure) -> UInt32 {
        guard value(p, name) != nil else { return rawInput }
        return UInt32(try whole(p, name, limit: Double(UInt32.max)))
    }

    /// The scales of `properties`; nil when it has none or says its data are scaled already.
    static func scales(_ p: [TDMSProperty]) throws(Failure) -> [Scale]? {
        guard value(p, "NI_Scaling_Status")?.text != "scaled" else { return nil }
        var count = 0
        if value(p, "NI_Number_Of_Scales") != nil {
            count = try whole(p, "NI_Number_Of_Scales", limit: Double(maxScales))
        } else {
            for prop in p where prop.name.hasPrefix("NI_Scale[") && prop.name.hasSuffix("]_Scale_Type") {
                let digits = prop.name.dropFirst(9).dropLast(12)
                if let k = Int(digits), k >= 0, k < maxScales { count = max(count, k + 1) }
            }
        }
        guard count > 0 else { return nil }
        var out: [Scale] = []
        for k in 0..<count {
            let prefix = "NI_Scale[\(k)]"
            guard let type = value(p, prefix + "_Scale_Type")?.text else {
                out.append(.scaler(UInt32(k)))
                continue
            }
            switch type {
            case "Linear":
                out.append(
                    .linear(
                        slope: try number(p, prefix + "_Linear_Slope"), intercept: try number(p, prefix + "_Linear_Y_Intercept"),
                        input: try input(p, prefix + "_Linear_Input_Source")))
            case "Polynomial":
                let n = try whole(p, prefix + "_Polynomial_Coefficients_Size", limit: 64)
                var c: [Double] = []
                for i in 0..<n { c.append(try number(p, prefix + "_Polynomial_Coefficients[\(i)]")) }
                out.append(.polynomial(c, input: try input(p, prefix + "_Polynomial_Input_Source")))
            case "Add", "Subtract":
                let l = try input(p, prefix + "_\(type)_Left_Operand_Input_Source")
                let r = try input(p, prefix + "_\(type)_Right_Operand_Input_Source")
                out.append(type == "Add" ? .add(l, r) : .subtract(l, r))
            case "AdvancedAPI":
                out.append(.same(try input(p, prefix + "_AdvancedAPI_Input_Source")))
            default:
                throw Failure(reason: "\(prefix) is a '\(type)' scale, which is not supported (Linear, Polynomial, Add, Subtract are)")
            }
        }
        return out
    }

    /// Whether `properties` describe scales to apply (well-formed or not).
    public static func hasScales(_ properties: [TDMSProperty]) -> Bool {
        do { return try scales(properties) != nil } catch { return true }
    }

    /// The channel's values: its last scale applied to its raw data (`raw`) and DAQmx scaler values
    /// (`scalers`, by scale id); nil when it has no scales.
    public static func scaled(properties: [TDMSProperty], raw: TDMSData?, scalers: [UInt32: TDMSData]) throws(Failure) -> [Double]? {
        guard let scales = try scales(properties) else { return nil }
        return try evaluate(UInt32(scales.count - 1), scales, raw: raw, scalers: scalers, depth: 0)
    }

    private static func evaluate(_ k: UInt32, _ scales: [Scale], raw: TDMSData?, scalers: [UInt32: TDMSData], depth: Int) throws(Failure)
        -> [Double]
    {
        if k == rawInput {
            guard let v = raw?.doubles else {
                throw Failure(reason: "a scale reads the raw data of a channel that has none (DAQmx raw data)")
            }
            return v
        }
        guard Int(k) < scales.count else { throw Failure(reason: "a scale reads scale \(k) of \(scales.count)") }
        guard depth <= scales.count else { throw Failure(reason: "NI_Scale[\(k)] is its own input (a cycle of scales)") }
        func at(_ i: UInt32) throws(Failure) -> [Double] { try evaluate(i, scales, raw: raw, scalers: scalers, depth: depth + 1) }
        switch scales[Int(k)] {
        case .scaler(let id):
            guard let v = scalers[id]?.doubles else {
                throw Failure(reason: "NI_Scale[\(k)] has no Scale_Type and the channel has no DAQmx scaler with scale id \(id)")
            }
            return v
        case .linear(let s, let c, let i): return try at(i).map { $0 * s + c }
        case .polynomial(let c, let i):
            return try at(i).map { x in c.reversed().reduce(0.0) { $0 * x + $1 } }
        case .add(let l, let r), .subtract(let l, let r):
            let a = try at(l), b = try at(r)
            guard a.count == b.count else { throw Failure(reason: "NI_Scale[\(k)] combines \(a.count) values with \(b.count)") }
            if case .add = scales[Int(k)] { return zip(a, b).map { $0 + $1 } }
            return zip(a, b).map { $1 - $0 }  // right − left, as NI's readers compute it
        case .same(let i): return try at(i)
        }
    }

    /// The channel as integer counts with one linear scale (value = count × slope + intercept): its
    /// last scale is Linear and reads int16 or int32 raw data or DAQmx scaler values; nil otherwise.
    public static func linearCounts(properties: [TDMSProperty], raw: TDMSData?, scalers: [UInt32: TDMSData]) -> (
        counts: TDMSData, slope: Double, intercept: Double
    )? {
        guard let scales = try? scales(properties), case .linear(let s, let c, let i)? = scales.last else { return nil }
        let source: TDMSData?
        if i == rawInput {
            source = raw
        } else if Int(i) < scales.count, case .scaler(let id) = scales[Int(i)] {
            source = scalers[id]
        } else {
            return nil
        }
        switch source {
        case .int16?, .int32?: return (source!, s, c)
        default: return nil
        }
    }
}
