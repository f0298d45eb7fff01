/// A forwarder's durable cursor, `<data_dir>/cursors/<sink>`: the log offset up to which the store confirmed
/// the records, as decimal text. Rewritten atomically (`FileIO.writeAtomically`) after every delivered batch.
enum CursorFile {
    static func read(_ path: String) throws(CollectorError) -> Int64? {
        guard let descriptor = try FileIO.openForReading(path) else { return nil }
        defer { FileIO.closeFile(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = try bytes.withUnsafeMutableBytes { raw in
            Result { () throws(CollectorError) in try FileIO.readFile(descriptor, into: raw, at: 0, path: path) }
        }.get()
        let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingSuffix { $0 == "\n" }
        guard let value = Int64(text), value >= 0 else {
            throw CollectorError(code: "invalid_cursor", message: "\(path) does not hold a log offset: '\(text)'")
        }
        return value
    }

    static func write(_ path: String, _ offset: Int64) throws(CollectorError) {
        try FileIO.writeAtomically(path, Array("\(offset)\n".utf8))
    }
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = Substring(self)
        while let last = text.last, predicate(last) { text = text.dropLast() }
        return String(text)
    }
}
