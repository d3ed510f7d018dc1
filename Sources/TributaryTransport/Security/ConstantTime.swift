/// Comparisons whose duration does not depend on where two secrets differ.
enum ConstantTime {
    /// Whether two byte strings are equal, looking at every byte of the longer one whatever the
    /// content, so that the time taken does not reveal how long a matching prefix of an API key is.
    static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let left = Array(a), right = Array(b)
        let length = max(left.count, right.count)
        var difference = UInt(bitPattern: left.count ^ right.count)
        for index in 0..<length {
            let x = index < left.count ? left[index] : 0
            let y = index < right.count ? right[index] : 0
            difference |= UInt(x ^ y)
        }
        return difference == 0
    }
}
