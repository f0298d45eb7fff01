import Foundation
import Testing
import UplinkFiles
import UplinkTestSupport

@Suite("File layer")
struct FileLayerTests {
    @Test("WholeFile reads a file whole, across chunks, and empty files")
    func readWhole() throws {
        let directory = try TestDirectories.make("uplink-files")
        let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try AtomicFile.write(content, to: directory + "/big")
        #expect(try WholeFile.read(path: directory + "/big").get() == content)
        #expect(try WholeFile.read(path: directory + "/big", limit: content.count).get() == content)
        try AtomicFile.write([], to: directory + "/empty")
        #expect(try WholeFile.read(path: directory + "/empty", limit: 0).get() == [])
    }

    @Test("WholeFile: a missing file and one over the limit are errors that name the path")
    func readWholeFailures() throws {
        let directory = try TestDirectories.make("uplink-files")
        let missing = directory + "/missing"
        let failure = try #require(WholeFile.read(path: missing).failure)
        #expect(failure == FileError(operation: "open", path: missing, errno: ENOENT))
        #expect(failure.isMissing)
        #expect(failure.description == "cannot open \(missing): No such file or directory")
        #expect(failure.reasonDescription == "errno 2 (No such file or directory)")

        try AtomicFile.write([UInt8](repeating: 7, count: 101), to: directory + "/large")
        let large = try #require(WholeFile.read(path: directory + "/large", limit: 100).failure)
        #expect(large == FileError(operation: "read", path: directory + "/large", reason: .tooLarge(limit: 100)))
        #expect(!large.isMissing)
        #expect(large.errno == EFBIG)
        #expect(large.description == "cannot read \(directory)/large: larger than 100 bytes")
        #expect(large.reasonDescription == "larger than 100 bytes")

        // A directory opens but cannot be read.
        let directoryFailure = try #require(WholeFile.read(path: directory).failure)
        #expect(directoryFailure == FileError(operation: "read", path: directory, errno: EISDIR))
    }

    @Test("Directories: create with parents and mode, list, and a file in the way")
    func directories() throws {
        let directory = try TestDirectories.make("uplink-files")
        let nested = directory + "/a/b/c"
        try Directories.create(nested, mode: 0o700)
        try Directories.create(nested, mode: 0o700)  // already there: fine
        let attributes = try FileManager.default.attributesOfItem(atPath: nested)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        try AtomicFile.write([1], to: nested + "/one")
        try AtomicFile.write([2], to: nested + "/two")
        #expect(try Directories.list(nested).sorted() == ["one", "two"])
        Directories.sync(nested)

        try AtomicFile.write([1], to: directory + "/file")
        #expect(throws: FileError(operation: "create directory", path: directory + "/file/sub", errno: ENOTDIR)) {
            try Directories.create(directory + "/file/sub", mode: 0o755)
        }
        #expect(throws: FileError(operation: "list", path: directory + "/missing", errno: ENOENT)) {
            try Directories.list(directory + "/missing")
        }
    }

    @Test("Directories: a read-only directory refuses a new one", .enabled(if: geteuid() != 0))
    func readOnlyDirectory() throws {
        let directory = try TestDirectories.make("uplink-files")
        defer { chmod(directory, 0o755) }  // removable again at exit
        chmod(directory, 0o555)
        #expect(throws: FileError(operation: "create directory", path: directory + "/sub", errno: EACCES)) {
            try Directories.create(directory + "/sub/deeper", mode: 0o755)
        }
    }

    @Test("SystemFile: append, write at an offset, read at an offset, read fully, size, truncate, sync")
    func descriptors() throws {
        let directory = try TestDirectories.make("uplink-files")
        let path = directory + "/data"
        let appender = try SystemFile.open(path, .append, mode: 0o600)
        try SystemFile.writeAll(appender, Array("hello ".utf8), path: path)
        try SystemFile.writeAll(appender, Array("world".utf8), path: path)
        try SystemFile.sync(appender, path: path)
        SystemFile.close(appender)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let updater = try SystemFile.open(path, .update(create: false))
        defer { SystemFile.close(updater) }
        try Array("W".utf8).withUnsafeBytes { try SystemFile.writeAll(updater, $0, at: 6, path: path) }
        #expect(try SystemFile.size(updater, path: path) == 11)
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = try buffer.withUnsafeMutableBytes { try SystemFile.readFully(updater, into: $0, at: 0, path: path) }
        #expect(count == 11)
        #expect(Array(buffer[..<count]) == Array("hello World".utf8))
        let part = try buffer.withUnsafeMutableBytes {
            try SystemFile.read(updater, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<3]), at: 6, path: path)
        }
        #expect(part == 3)
        #expect(Array(buffer[..<3]) == Array("Wor".utf8))
        #expect(try buffer.withUnsafeMutableBytes { try SystemFile.read(updater, into: $0, at: 11, path: path) } == 0)
        try SystemFile.truncate(updater, to: 5, path: path)
        #expect(try WholeFile.read(path: path).get() == Array("hello".utf8))
    }

    @Test("SystemFile.writeAll of vectors writes the parts in order, an empty one included; a failure names the path")
    func vectors() throws {
        let directory = try TestDirectories.make("uplink-files")
        let path = directory + "/vectored"
        let fd = try SystemFile.open(path, .append)
        let parts: [[UInt8]] = [Array("head".utf8), [], [UInt8](repeating: 9, count: 100_000)]
        try parts[0].withUnsafeBytes { first in
            try parts[2].withUnsafeBytes { third in
                try withUnsafeTemporaryAllocation(of: iovec.self, capacity: 3) { vectors in
                    vectors[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count)
                    vectors[1] = iovec(iov_base: nil, iov_len: 0)
                    vectors[2] = iovec(iov_base: UnsafeMutableRawPointer(mutating: third.baseAddress), iov_len: third.count)
                    try SystemFile.writeAll(fd, vectors, total: first.count + third.count, path: path)
                }
            }
        }
        SystemFile.close(fd)
        #expect(try WholeFile.read(path: path).get() == parts.flatMap { $0 })

        let reader = try SystemFile.open(path, .read)
        defer { SystemFile.close(reader) }
        #expect(throws: FileError(operation: "write", path: path, errno: EBADF)) {
            try parts[0].withUnsafeBytes { first in
                try withUnsafeTemporaryAllocation(of: iovec.self, capacity: 1) { vectors in
                    vectors[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count)
                    try SystemFile.writeAll(reader, vectors, total: first.count, path: path)
                }
            }
        }
    }

    @Test("SystemFile.open: missing, existing with createNew, and no create for update")
    func openFailures() throws {
        let directory = try TestDirectories.make("uplink-files")
        #expect(throws: FileError(operation: "open", path: directory + "/nope", errno: ENOENT)) {
            try SystemFile.open(directory + "/nope", .read)
        }
        #expect(throws: FileError(operation: "open", path: directory + "/nope", errno: ENOENT)) {
            try SystemFile.open(directory + "/nope", .update(create: false))
        }
        #expect(throws: FileError(operation: "create", path: directory + "/missing/new", errno: ENOENT)) {
            try SystemFile.open(directory + "/missing/new", .truncate, operation: "create")
        }
        let fd = try SystemFile.open(directory + "/new", .createNew, mode: 0o600, operation: "create")
        SystemFile.close(fd)
        #expect(throws: FileError(operation: "create", path: directory + "/new", errno: EEXIST)) {
            try SystemFile.open(directory + "/new", .createNew, mode: 0o600, operation: "create")
        }
    }
}

extension Result {
    /// The error of a failure; nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
