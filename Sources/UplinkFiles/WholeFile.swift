/// Reads a whole small file with plain system calls (no Foundation): configuration and secret files, certificates,
/// state files and `/proc` files, whose size is unknown until they are read.
public enum WholeFile {
    /// The contents of the file at `path`, read in 64 KiB chunks with `read(2)` until its end (so a pipe works too). Fails with the `open` or `read` that
    /// failed, or with `.tooLarge(limit:)` (operation `read`) when the file holds more than `limit` bytes.
    public static func read(path: String, limit: Int = .max) -> Result<[UInt8], FileError> {
        let descriptor: Int32
        do {
            descriptor = try SystemFile.open(path, .read)
        } catch {
            return .failure(error)
        }
        defer { SystemFile.close(descriptor) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let read = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(FileError) in try SystemFile.readNext(descriptor, into: raw, path: path) }
            }
            guard case .success(let count) = read else { return read.map { _ in [] } }
            if count == 0 { return .success(contents) }
            contents.append(contentsOf: chunk[..<count])
            if contents.count > limit { return .failure(FileError(operation: "read", path: path, reason: .tooLarge(limit: limit))) }
        }
    }
}
