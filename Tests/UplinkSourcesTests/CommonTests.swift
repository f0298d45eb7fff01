import Foundation
import SystemPackage
import Testing

@testable import UplinkSources

@Suite("common helpers")
struct CommonTests {
    private func withBytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        Array(text.utf8).withUnsafeBufferPointer(body)
    }

    @Test("parseUInt64")
    func parseUInt64() {
        func parse(_ text: String) -> UInt64? {
            withBytes(text) { ByteParsing.parseUInt64($0, 0..<$0.count) }
        }
        #expect(parse("0") == 0)
        #expect(parse("18446744073709551615") == .max)
        #expect(parse("18446744073709551616") == nil)
        #expect(parse("99999999999999999999") == nil)
        #expect(parse("") == nil)
        #expect(parse("12a") == nil)
        #expect(parse("-1") == nil)
        #expect(parse(" 1") == nil)
        #expect(withBytes("12") { ByteParsing.parseUInt64($0, 0..<5) } == nil, "out-of-bounds range")
    }

    @Test("lines and fields")
    func linesAndFields() {
        let text = "a b\tc\r\n\n  \nlast  x"
        var lines: [[String]] = []
        withBytes(text) { bytes in
            ByteParsing.forEachLine(in: bytes) { line in
                var scanner = FieldScanner(bytes, line: line)
                var fields: [String] = []
                while let field = scanner.next() {
                    fields.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[field]), as: UTF8.self))
                }
                lines.append(fields)
            }
        }
        #expect(lines == [["a", "b", "c"], [], [], ["last", "x"]])
    }

    @Test("keys")
    func keys() {
        func isKey(_ text: String) -> Bool { withBytes(text) { ByteParsing.isKey($0, 0..<$0.count) } }
        #expect(isKey("MemTotal"))
        #expect(isKey("Active(anon)"))
        #expect(isKey("procs_running"))
        #expect(isKey("_x1"))
        #expect(!isKey("1abc"))
        #expect(!isKey(""))
        #expect(!isKey("a-b"))
        #expect(!isKey("@@@"))
    }

    @Test("the reader grows its buffer for files larger than it and reads everything")
    func readerGrows() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big")
        let content = (0..<2000).map { "line \($0)\n" }.joined()
        try Data(content.utf8).write(to: file)
        var reader = SmallFileReader(path: file.path, initialCapacity: 64)
        try reader.read()
        #expect(reader.count == content.utf8.count)
        #expect(reader.withContents { Array($0) } == Array(content.utf8))
        let capacity = reader.capacity
        try Data("short\n".utf8).write(to: file)
        try reader.read()
        #expect(reader.withContents { String(decoding: $0, as: UTF8.self) } == "short\n")
        #expect(reader.capacity == capacity, "the buffer is kept")
    }

    @Test("the reader refuses files larger than its maximum")
    func readerMaximum() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("f")
        try Data(repeating: 65, count: 1000).write(to: file)
        var exact = SmallFileReader(path: file.path, initialCapacity: 64, maximumSize: 1000)
        try exact.read()
        #expect(exact.count == 1000)
        var tooSmall = SmallFileReader(path: file.path, initialCapacity: 64, maximumSize: 999)
        #expect(throws: Errno.fileTooLarge) { try tooSmall.read() }
        #expect(tooSmall.count == 0)
        // /dev/zero never ends.
        var endless = SmallFileReader(path: "/dev/zero", maximumSize: 1 << 16)
        #expect(throws: Errno.fileTooLarge) { try endless.read() }
    }

    @Test("the reader reports a missing file as such")
    func readerMissing() {
        var reader = SmallFileReader(path: "/nonexistent-\(UUID().uuidString)/stat")
        #expect(throws: Errno.noSuchFileOrDirectory) { try reader.read() }
        #expect(reader.count == 0)
        #expect(Errno.noSuchFileOrDirectory.meansFileIsMissing)
        #expect(!Errno.permissionDenied.meansFileIsMissing)
    }

    @Test("paths join with one slash")
    func paths() {
        #expect(joinPath("/proc", "stat") == "/proc/stat")
        #expect(joinPath("/proc/", "stat") == "/proc/stat")
        #expect(joinPath("", "stat") == "stat")
    }
}
