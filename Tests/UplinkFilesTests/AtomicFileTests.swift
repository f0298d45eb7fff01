import Foundation
import Testing
import UplinkFiles
import UplinkTestSupport

@Suite("Atomic file")
struct AtomicFileTests {
    @Test("replaces the content, with the mode asked for, and leaves no temporary file")
    func replaces() throws {
        let directory = try TestDirectories.make("uplink-files")
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
        let directory = try TestDirectories.make("uplink-files")
        #expect(throws: FileError(operation: "create", path: directory + "/missing/state.tmp", errno: ENOENT)) {
            try AtomicFile.write([1], to: directory + "/missing/state")
        }
        // A directory in the way: the rename fails, the temporary file goes, the directory stays.
        let occupied = directory + "/occupied"
        try FileManager.default.createDirectory(atPath: occupied + "/inside", withIntermediateDirectories: true)
        #expect(throws: FileError(operation: "rename", path: occupied + ".tmp", errno: EISDIR)) {
            try AtomicFile.write([1], to: occupied)
        }
        #expect(!FileManager.default.fileExists(atPath: occupied + ".tmp"))
        #expect(FileManager.default.fileExists(atPath: occupied + "/inside"))
    }

    @Test("a failed write leaves the old content and no temporary file; the error names the temporary file")
    func failureKeepsOldContent() throws {
        let directory = try TestDirectories.make("uplink-files")
        let path = directory + "/state"
        try AtomicFile.write(Array("old".utf8), to: path)
        // A directory where the temporary file goes: it cannot be created.
        try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: false)
        let error = #expect(throws: FileError.self) { try AtomicFile.write(Array("new".utf8), to: path) }
        #expect(error == FileError(operation: "create", path: path + ".tmp", errno: EISDIR))
        #expect(error?.description == "cannot create \(path).tmp: Is a directory")
        #expect(FileManager.default.contents(atPath: path) == Data("old".utf8))
    }

    @Test("a directory that cannot be written to: nothing is created, the old content stays", .enabled(if: geteuid() != 0))
    func readOnlyDirectory() throws {
        let directory = try TestDirectories.make("uplink-files")
        defer { chmod(directory, 0o755) }  // removable again at exit
        let path = directory + "/state"
        try AtomicFile.write(Array("old".utf8), to: path)
        chmod(directory, 0o555)
        #expect(throws: FileError(operation: "create", path: path + ".tmp", errno: EACCES)) {
            try AtomicFile.write(Array("new".utf8), to: path)
        }
        #expect(FileManager.default.contents(atPath: path) == Data("old".utf8))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    @Test("the parent directory of a path")
    func parentDirectory() {
        #expect(AtomicFile.parentDirectory(of: "/var/lib/uplink/state") == "/var/lib/uplink")
        #expect(AtomicFile.parentDirectory(of: "/state") == "/")
        #expect(AtomicFile.parentDirectory(of: "state") == ".")
    }
}
