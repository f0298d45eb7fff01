import Foundation
import Testing
import UplinkFiles
import UplinkTestSupport

@Suite("Directory entries")
struct DirectoryEntriesTests {
    @Test("entries carry the type the directory records; list is their names")
    func entries() throws {
        let directory = try TestDirectories.make("uplink-files")
        try AtomicFile.write([1], to: directory + "/file")
        try Directories.create(directory + "/sub", mode: 0o755)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "file")
        let entries = try Directories.entries(directory).sorted { $0.name < $1.name }
        #expect(entries.map(\.name) == ["file", "link", "sub"])
        // tmpfs and ext4 record types; a file system that does not leaves them nil.
        if entries.allSatisfy({ $0.isDirectory != nil }) {
            #expect(entries.map(\.isDirectory) == [false, false, true])
            #expect(entries.map(\.isRegular) == [true, false, false])
        }
        #expect(entries.map(\.isSymbolicLink) == [false, true, false])
        #expect(try Directories.list(directory).sorted() == ["file", "link", "sub"])
        #expect(throws: FileError(operation: "list", path: directory + "/file", errno: ENOTDIR)) {
            try Directories.entries(directory + "/file")
        }
    }
}
