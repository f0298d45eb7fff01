import Glibc
import Testing
import UplinkTestSupport

@testable import UplinkSources

@Suite("Tail file set")
struct TailFileSetTests {
    /// A followed file with a real descriptor on a file of its own in `directory`.
    private func followed(_ name: String, inode: UInt64, in directory: String) throws -> TailedFile {
        let path = directory + "/" + name
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0, "cannot create \(path)")
        return TailedFile(
            descriptor: descriptor, inode: TailFS.Inode(device: 1, inode: inode), path: path, fingerprint: .empty,
            originID: inode, offset: 0, maxLineBytes: 1024, multiline: nil, now: .now)
    }

    @Test("a file added is found by inode and path; moved, it is found at the new path only")
    func addAndMove() throws {
        let directory = try TestDirectories.make("tail-file-set")
        var set = TailFileSet()
        let file = try followed("app.log", inode: 7, in: directory)
        set.add(file)
        #expect(set.file(inode: file.inode) === file)
        #expect(set.file(at: file.path) === file)
        #expect(set.isActive(file))

        let old = file.path
        set.vacate(file)
        file.path = directory + "/app.log.1"
        set.setActive(file)
        #expect(set.file(at: old) == nil)
        #expect(set.file(at: file.path) === file)
        #expect(set.file(inode: file.inode) === file, "a rename keeps the inode")
        file.close()
        set.closed(file)
    }

    @Test("vacating a path another file took over leaves that file in place")
    func vacateOnlyOwnPath() throws {
        let directory = try TestDirectories.make("tail-file-set")
        var set = TailFileSet()
        let first = try followed("a.log", inode: 1, in: directory)
        let second = try followed("b.log", inode: 2, in: directory)
        set.add(first)
        set.add(second)
        // `second` is renamed over `first`'s path; `first` is then reported gone from it.
        set.vacate(second)
        second.path = first.path
        set.setActive(second)
        set.vacate(first)
        #expect(set.file(at: first.path) === second)
        #expect(!set.isActive(first))
        for file in [first, second] {
            file.close()
            set.closed(file)
        }
    }

    @Test("awake: parked files at their paths are left out until unparked; detached parked ones stay in")
    func awake() throws {
        let directory = try TestDirectories.make("tail-file-set")
        var set = TailFileSet()
        let quiet = try followed("quiet.log", inode: 1, in: directory)
        let busy = try followed("busy.log", inode: 2, in: directory)
        set.add(quiet)
        set.add(busy)
        #expect(set.awake.map(\.inode.inode) == [1, 2])

        quiet.park(modified: 0)
        set.awakeChanged()
        #expect(set.awake.map(\.inode.inode) == [2])

        quiet.detachedAt = .now
        set.awakeChanged()
        #expect(set.awake.map(\.inode.inode) == [1, 2], "a parked file renamed away is read to its end")

        let late = try followed("late.log", inode: 3, in: directory)
        set.add(late)
        #expect(set.awake.map(\.inode.inode) == [1, 2, 3], "adding a file rebuilds the list without being told")
        for file in [quiet, busy, late] {
            file.close()
            set.closed(file)
        }
        #expect(set.awake.allSatisfy { $0.isClosed })
    }

    @Test("closed files leave the inode index at once and the set once their lines are acknowledged")
    func closedAndAcknowledged() throws {
        let directory = try TestDirectories.make("tail-file-set")
        var set = TailFileSet()
        let rotated = try followed("app.log.1", inode: 1, in: directory)
        let current = try followed("app.log", inode: 2, in: directory)
        set.add(rotated)
        set.add(current)
        #expect(!set.removeClosedAndAcknowledged(), "nothing was closed")

        rotated.enqueue(sequence: 10, offset: 100)
        rotated.close()
        set.closed(rotated)
        #expect(set.file(inode: rotated.inode) == nil)
        #expect(!set.removeClosedAndAcknowledged(), "its line 10 is not acknowledged yet")
        #expect(set.all.count == 2)

        _ = rotated.acknowledge(through: 10)
        #expect(set.removeClosedAndAcknowledged())
        #expect(set.all.map(\.inode.inode) == [2])
        #expect(set.awake.map(\.inode.inode) == [2])
        #expect(!set.removeClosedAndAcknowledged(), "no closed file is left")
        current.close()
        set.closed(current)
    }

    @Test("aliases: another name of a followed file, until forgotten")
    func aliases() {
        var set = TailFileSet()
        let inode = TailFS.Inode(device: 1, inode: 9)
        set.setAlias(inode, at: "/var/log/link.log")
        #expect(set.alias(at: "/var/log/link.log") == inode)
        set.setAlias(nil, at: "/var/log/link.log")
        #expect(set.alias(at: "/var/log/link.log") == nil)
    }

    @Test("recently closed: the newest `limit` are kept, a taken one is gone, and taking frees its place")
    func recentlyClosed() {
        func checkpoint(_ inode: UInt64, offset: UInt64 = 0) -> TailCheckpoint {
            TailCheckpoint(
                inode: TailFS.Inode(device: 1, inode: inode), fingerprint: .empty, originID: inode, offset: offset,
                path: "/log/\(inode)")
        }
        var closed = TailRecentlyClosed(limit: 3)
        for inode in 1...4 { closed.remember(checkpoint(UInt64(inode))) }
        #expect(closed.count == 3)
        #expect(closed.take(TailFS.Inode(device: 1, inode: 1)) == nil, "the oldest was dropped")
        #expect(closed.take(TailFS.Inode(device: 1, inode: 2)) == checkpoint(2))
        #expect(closed.take(TailFS.Inode(device: 1, inode: 2)) == nil)

        closed.remember(checkpoint(3, offset: 50))
        #expect(closed.count == 2, "the same inode again replaces its checkpoint")
        closed.remember(checkpoint(5))
        #expect(closed.count == 3, "the taken checkpoint's place is free again")
        #expect(closed.take(TailFS.Inode(device: 1, inode: 3)) == checkpoint(3, offset: 50))
        #expect(closed.take(TailFS.Inode(device: 1, inode: 4)) == checkpoint(4))
        #expect(closed.take(TailFS.Inode(device: 1, inode: 5)) == checkpoint(5))
    }
}
