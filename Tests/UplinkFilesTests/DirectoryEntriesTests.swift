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

    @Test("removeTree removes a directory and everything below it, not what a link inside points to")
    func removeTree() throws {
        let outside = try TestDirectories.make("uplink-files")
        try AtomicFile.write([1], to: outside + "/kept")
        let directory = try TestDirectories.make("uplink-files")
        try Directories.create(directory + "/a/b", mode: 0o755)
        try AtomicFile.write([1], to: directory + "/a/b/file")
        try AtomicFile.write([1], to: directory + "/top")
        try FileManager.default.createSymbolicLink(atPath: directory + "/a/link", withDestinationPath: outside)
        Directories.removeTree(directory)
        #expect(FileStatus(path: directory, followLinks: false) == nil)
        #expect(FileStatus(path: outside + "/kept")?.isRegular == true)
        Directories.removeTree(directory)  // a missing path is fine
        Directories.removeTree(outside + "/kept")
        #expect(FileStatus(path: outside + "/kept") == nil)
    }

    @Test("FileStatus tells a file's type, size, links and identity, and of a link itself with followLinks false")
    func fileStatus() throws {
        let directory = try TestDirectories.make("uplink-files")
        try AtomicFile.write([1, 2, 3], to: directory + "/file")
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "file")
        let file = try #require(FileStatus(path: directory + "/file"))
        #expect(file.isRegular && !file.isDirectory && !file.isSymbolicLink)
        #expect(file.size == 3 && file.links == 1 && file.modified > 0 && file.changed > 0)
        #expect(FileStatus(path: directory + "/link")?.identity == file.identity)
        let link = try #require(FileStatus(path: directory + "/link", followLinks: false))
        #expect(link.isSymbolicLink && link.identity != file.identity)
        #expect(FileStatus(path: directory)?.isDirectory == true)
        let fd = open(directory + "/file", O_RDONLY)
        defer { close(fd) }
        #expect(FileStatus(descriptor: fd) == file)
        #expect(FileStatus(path: directory + "/missing") == nil)
    }

    @Test("SymbolicLink.target is a link's target as stored, nil for what is not a link")
    func symbolicLinkTarget() throws {
        let directory = try TestDirectories.make("uplink-files")
        try AtomicFile.write([1], to: directory + "/file")
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "sub/../file")
        #expect(SymbolicLink.target(of: directory + "/link") == "sub/../file")
        #expect(SymbolicLink.target(of: directory + "/file") == nil)
        #expect(SymbolicLink.target(of: directory + "/missing") == nil)
        let fd = open(directory + "/file", O_RDONLY)
        defer { close(fd) }
        // The kernel's link names the file by its real path (the temporary directory may be behind a link itself).
        let real = try #require(SymbolicLink.target(of: "/proc/self/fd/\(fd)"))
        #expect(FileStatus(path: real)?.identity == FileStatus(descriptor: fd)?.identity)
    }
}
