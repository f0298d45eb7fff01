import Foundation
import Testing
import UplinkCore

@Suite("Atomic file")
struct AtomicFileTests {
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "uplink-atomic-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("replaces the content, with the mode asked for, and leaves no temporary file")
    func replaces() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/state"
        try AtomicFile.write(Array("old".utf8), to: path)
        try AtomicFile.write(Array("new content".utf8), to: path, mode: 0o600)
        #expect(FileManager.default.contents(atPath: path) == Data("new content".utf8))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("a step that fails names itself and its errno, removes the temporary file and leaves the target alone")
    func failures() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: AtomicFile.Failure(operation: "create", path: directory + "/missing/state.tmp", errno: ENOENT)) {
            try AtomicFile.write([1], to: directory + "/missing/state")
        }
        // A directory in the way: the rename fails, the temporary file goes, the directory stays.
        let occupied = directory + "/occupied"
        try FileManager.default.createDirectory(atPath: occupied + "/inside", withIntermediateDirectories: true)
        #expect(throws: AtomicFile.Failure(operation: "rename", path: occupied + ".tmp", errno: EISDIR)) {
            try AtomicFile.write([1], to: occupied)
        }
        #expect(!FileManager.default.fileExists(atPath: occupied + ".tmp"))
        #expect(FileManager.default.fileExists(atPath: occupied + "/inside"))
    }

    @Test("the parent directory of a path")
    func parentDirectory() {
        #expect(AtomicFile.parentDirectory(of: "/var/lib/uplink/state") == "/var/lib/uplink")
        #expect(AtomicFile.parentDirectory(of: "/state") == "/")
        #expect(AtomicFile.parentDirectory(of: "state") == ".")
    }
}
