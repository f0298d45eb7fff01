extension WireLineWriter {
    /// Appends `string` as a quoted JSON string, escaped as the wire lines are (for other JSON lines, such as the
    /// collector's records and rejects files).
    public static func appendJSONString(_ string: String, to output: inout [UInt8]) {
        JSONWriting.appendString(string, to: &output)
    }

    /// Appends arbitrary bytes as a quoted JSON string: quotes, backslashes and control characters escaped, bytes
    /// that are not well-formed UTF-8 replaced by U+FFFD.
    public static func appendJSONString(bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        JSONWriting.appendString(bytes: bytes, to: &output)
    }
}
