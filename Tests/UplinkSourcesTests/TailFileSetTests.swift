import Glibc
import UplinkFiles
import Testing
import UplinkTestSupport

@testable import UplinkSources

@Suite("Tail file set")
struct TailFileSetTests {
    /// A set following one file per name, each with a real descriptor on a file of its own; inodes 1, 2, … in order.
    private func following(_ names: String...) throws -> (set: TailFileSet, files: [TailedFile], directory: String) {
        let directory = try TestDirectories.make("tail-file-set")
        var set = TailFileSet()
        var files: [TailedFile] = []
        for (index, name) in names.enumerated() {
            let file = try openFile(name, inode: UInt64(index + 1), in: directory)
            set.add(file)
            files.append(file)
        }
        return (set, files, directory)
    }

    /// A followed file at `directory/name`, opened for real.
    private func openFile(_ name: String, inode: UInt64, in directory: String) throws -> TailedFile {
        let path = directory + "/" + name
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0, "cannot create \(path)")
        return TailedFile(
            descriptor: descriptor, inode: FileIdentity(device: 1, inode: inode), path: path, fingerprint: .empty,
            originID: inode, offset: 0, maxLineBytes: 1024, multiline: nil, now: .now)
    }

    /// `removeClosedAndAcknowledged()` (a mutating call `#expect` cannot make itself).
    private func removed(_ set: inout TailFileSet) -> Bool {
        set.removeClosedAndAcknowledged()
    }

    /// Closes every file of the set, as the engine does at the end.
    private func closeAll(_ set: inout TailFileSet) {
        for file in set.all {
            file.close()
            set.closed(file)
        }
    }

    @Test("a file added is found by inode and path; moved, it is found at the new path only")
    func addAndMove() throws {
        var (set, files, _) = try following("app.log")
        let file = files[0]
        #expect(set.file(inode: file.inode) === file)
        #expect(set.file(at: file.path) === file)
        #expect(set.isActive(file))

        let old = file.path
        set.vacate(file)
        file.path = old + ".1"
        set.setActive(file)
        #expect(set.file(at: old) == nil)
        #expect(set.file(at: file.path) === file)
        #expect(set.file(inode: file.inode) === file, "a rename keeps the inode")
        closeAll(&set)
    }

    @Test("vacating a path another file took over leaves that file in place")
    func vacateOnlyOwnPath() throws {
        var (set, files, _) = try following("a.log", "b.log")
        let (first, second) = (files[0], files[1])
        // `second` is renamed over `first`'s path; `first` is then reported gone from it.
        set.vacate(second)
        second.path = first.path
        set.setActive(second)
        set.vacate(first)
        #expect(set.file(at: first.path) === second)
        #expect(!set.isActive(first))
        closeAll(&set)
    }

    @Test("awake: parked files at their paths are left out until unparked; detached parked ones stay in")
    func awake() throws {
        var (set, files, directory) = try following("quiet.log", "busy.log")
        let quiet = files[0]
        #expect(set.awake.map(\.inode.inode) == [1, 2])

        quiet.park(modified: 0)
        set.awakeChanged()
        #expect(set.awake.map(\.inode.inode) == [2])

        quiet.detachedAt = .now
        set.awakeChanged()
        #expect(set.awake.map(\.inode.inode) == [1, 2], "a parked file renamed away is read to its end")

        let late = try openFile("late.log", inode: 3, in: directory)
        set.add(late)
        #expect(set.awake.map(\.inode.inode) == [1, 2, 3], "adding a file rebuilds the list without being told")
        late.close()
        set.closed(late)
        #expect(removed(&set))
        #expect(set.awake.map(\.inode.inode) == [1, 2], "so does forgetting one")
        closeAll(&set)
    }

    @Test("closed files leave the inode index at once and the set once their lines are acknowledged")
    func closedAndAcknowledged() throws {
        var (set, files, _) = try following("app.log.1", "app.log")
        let rotated = files[0]
        #expect(!removed(&set), "nothing was closed")

        rotated.enqueue(sequence: 10, offset: 100)
        rotated.close()
        set.closed(rotated)
        #expect(set.file(inode: rotated.inode) == nil)
        #expect(!removed(&set), "its line 10 is not acknowledged yet")
        #expect(set.all.count == 2)

        _ = rotated.acknowledge(through: 10)
        #expect(removed(&set))
        #expect(set.all.map(\.inode.inode) == [2])
        #expect(set.awake.map(\.inode.inode) == [2])
        #expect(!removed(&set), "no closed file is left")
        closeAll(&set)
    }

    @Test("aliases: another name of a followed file, until forgotten")
    func aliases() {
        var set = TailFileSet()
        let inode = FileIdentity(device: 1, inode: 9)
        set.setAlias(inode, at: "/var/log/link.log")
        #expect(set.alias(at: "/var/log/link.log") == inode)
        set.setAlias(nil, at: "/var/log/link.log")
        #expect(set.alias(at: "/var/log/link.log") == nil)
    }

    @Test("recently closed: the newest `limit` are kept, a taken one is gone, and taking frees its place")
    func recentlyClosed() {
        func checkpoint(_ inode: UInt64, offset: UInt64 = 0) -> TailCheckpoint {
            TailCheckpoint(
                inode: FileIdentity(device: 1, inode: inode), fingerprint: .empty, originID: inode, offset: offset,
                path: "/log/\(inode)")
        }
        var closed = TailRecentlyClosed(limit: 3)
        for inode in 1...4 { closed.remember(checkpoint(UInt64(inode))) }
        #expect(closed.count == 3)
        #expect(closed.take(FileIdentity(device: 1, inode: 1)) == nil, "the oldest was dropped")
        #expect(closed.take(FileIdentity(device: 1, inode: 2)) == checkpoint(2))
        #expect(closed.take(FileIdentity(device: 1, inode: 2)) == nil)

        closed.remember(checkpoint(3, offset: 50))
        #expect(closed.count == 2, "the same inode again replaces its checkpoint")
        closed.remember(checkpoint(5))
        #expect(closed.count == 3, "the taken checkpoint's place is free again")
        #expect(closed.take(FileIdentity(device: 1, inode: 3)) == checkpoint(3, offset: 50))
        #expect(closed.take(FileIdentity(device: 1, inode: 4)) == checkpoint(4))
        #expect(closed.take(FileIdentity(device: 1, inode: 5)) == checkpoint(5))
    }
}
