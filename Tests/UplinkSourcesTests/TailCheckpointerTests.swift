import Foundation
import UplinkFiles
import Logging
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// `TailCheckpointer` on its own: real checkpoint and changes files in a temporary state directory, followed files
/// made up (the checkpointer reads none of them, only where they stand), time on a `ManualTickClock`.
@Suite("Tail checkpointer")
struct TailCheckpointerTests {
    static let interval: Duration = .seconds(5)

    /// A followed file as the checkpointer sees it: inode `number`, a full fingerprint, acknowledged to `offset`. It
    /// has no descriptor: the checkpointer never reads a file.
    static func followed(_ number: UInt64, offset: UInt64, now: ContinuousClock.Instant) -> TailedFile {
        TailedFile(
            descriptor: -1, inode: FileIdentity(device: 2049, inode: number), path: "/var/log/app/f\(number).log",
            fingerprint: TailFingerprint(length: TailFingerprint.maximumLength, hash: number &* 0x9e37_79b9_7f4a_7c15),
            originID: 1000 + number, offset: offset, maxLineBytes: 1024, multiline: nil, now: now)
    }

    /// What the checkpoint file should say about `file`.
    static func checkpoint(_ file: TailedFile) -> TailCheckpoint {
        TailCheckpoint(
            inode: file.inode, fingerprint: file.fingerprint, originID: file.originID, offset: file.acknowledgedOffset,
            path: file.path)
    }

    static func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    @Test("it writes a full file, then only the few files that moved to a changes file, and reads back what it wrote")
    func fullThenChanges() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let clock = ManualTickClock()
        let logs = LogCapture()
        let checkpointer = try TailCheckpointer(
            stateDirectory: state, sourceName: "app logs", interval: Self.interval, logger: logs.logger, now: clock.now)
        let path = try #require(checkpointer.path)
        #expect(path == state + "/tail/app_logs.checkpoints")
        let changesPath = TailCheckpointChanges.path(checkpointFile: path)
        #expect(checkpointer.load().isEmpty)  // nothing written yet: no file, no warning
        #expect(logs.warnings.isEmpty)

        // The first write: every file, in the checkpoint file.
        let files = (1...40).map { Self.followed($0, offset: $0 * 100, now: clock.now) }
        checkpointer.markChanged()
        await checkpointer.write(files, force: true, now: clock.now)
        #expect(!checkpointer.isDirty)
        let full = try #require(Self.contents(path))
        #expect(try TailCheckpointFile.decode(full).get() == files.map(Self.checkpoint))
        #expect(!FileManager.default.fileExists(atPath: changesPath))

        // Three of forty move (one is a file followed anew): only they go to the changes file, against this content.
        files[6].acknowledgedOffset += 17
        files[29].acknowledgedOffset += 3
        let added = Self.followed(77, offset: 5, now: clock.now)
        let withAdded = files + [added]
        checkpointer.markChanged()
        clock.advance(by: Self.interval)
        await checkpointer.write(withAdded, force: false, now: clock.now)
        #expect(Self.contents(path).map { String(decoding: $0, as: UTF8.self) } == String(decoding: full, as: UTF8.self))
        let changes = try TailCheckpointChanges.decode(try #require(Self.contents(changesPath))).get()
        #expect(changes.base == TailCheckpointChanges.contentHash(full))
        #expect(changes.checkpoints == [files[6], files[29], added].map(Self.checkpoint))

        // A checkpointer started anew reads both: every file where it stands now.
        let reloaded = TailCheckpointer(path: path, interval: Self.interval, logger: logs.logger, now: clock.now)
        #expect(reloaded.load() == withAdded.map(Self.checkpoint))

        // Most files move: the checkpoint file is rewritten whole and the changes file removed.
        for file in withAdded.prefix(20) { file.acknowledgedOffset += 1 }
        checkpointer.markChanged()
        clock.advance(by: Self.interval)
        await checkpointer.write(withAdded, force: false, now: clock.now)
        #expect(!FileManager.default.fileExists(atPath: changesPath))
        #expect(try TailCheckpointFile.decode(try #require(Self.contents(path))).get() == withAdded.map(Self.checkpoint))

        // The one that reloaded goes on from what it read: a file moving writes a changes file against the new content.
        let again = TailCheckpointer(path: path, interval: Self.interval, logger: logs.logger, now: clock.now)
        #expect(again.load() == withAdded.map(Self.checkpoint))
        withAdded[3].acknowledgedOffset += 1
        again.markChanged()
        await again.write(withAdded, force: true, now: clock.now)
        let rewritten = try #require(Self.contents(path))
        let later = try TailCheckpointChanges.decode(try #require(Self.contents(changesPath))).get()
        #expect(later.base == TailCheckpointChanges.contentHash(rewritten))
        #expect(later.checkpoints == [Self.checkpoint(withAdded[3])])
        #expect(logs.warnings.isEmpty)
    }

    @Test("a corrupt or unreadable checkpoint file is reported, not a crash; the next write replaces it whole")
    func corruptFiles() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let clock = ManualTickClock()
        let logs = LogCapture()
        let checkpointer = try TailCheckpointer(
            stateDirectory: state, sourceName: "app", interval: Self.interval, logger: logs.logger, now: clock.now)
        let path = try #require(checkpointer.path)
        let changesPath = TailCheckpointChanges.path(checkpointFile: path)
        writeFile(path, "uplink-tail-checkpoints 1\n1 2 3 not-hex 4 5 /x\n\u{0}\u{1}garbage")
        #expect(checkpointer.load().isEmpty)
        #expect(logs.warnings.count == 1)
        #expect(logs.warnings.first?.message.contains("\(path) is corrupt") == true)

        // What it knew of the file is nothing: the next write, however few files moved, is the whole file.
        let files = (1...8).map { Self.followed($0, offset: 10, now: clock.now) }
        checkpointer.markChanged()
        await checkpointer.write(files, force: true, now: clock.now)
        let written = try #require(Self.contents(path))
        #expect(try TailCheckpointFile.decode(written).get() == files.map(Self.checkpoint))

        // A corrupt changes file beside a good checkpoint file: the checkpoint file alone, and the reason.
        writeFile(changesPath, "uplink-tail-checkpoint-changes 1 \(TailCheckpointFile.hex(TailCheckpointChanges.contentHash(written)))\n1 2")
        let reloaded = TailCheckpointer(path: path, interval: Self.interval, logger: logs.logger, now: clock.now)
        #expect(reloaded.load() == files.map(Self.checkpoint))
        #expect(logs.warnings.count == 2)
        #expect(logs.warnings.last?.message.contains("\(changesPath) is corrupt") == true)

        // A checkpoint file that cannot be read (here a directory): reported, no checkpoints.
        let unreadable = directory.file("unreadable.checkpoints")
        try FileManager.default.createDirectory(atPath: unreadable, withIntermediateDirectories: true)
        let blocked = TailCheckpointer(path: unreadable, interval: Self.interval, logger: logs.logger, now: clock.now)
        #expect(blocked.load().isEmpty)
        #expect(logs.warnings.count == 3)
        #expect(logs.warnings.last?.message.contains("cannot read the checkpoint file \(unreadable)") == true)
    }

    @Test("a write is due only after the checkpoint interval since the last one, unless forced")
    func dueAfterInterval() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let start = clock.now
        let checkpointer = try TailCheckpointer(
            stateDirectory: directory.file("state"), sourceName: "app", interval: Self.interval,
            logger: Logger(label: "test"), now: start)
        let path = try #require(checkpointer.path)
        let files = [Self.followed(1, offset: 0, now: start)]

        // Nothing changed and nothing waits for acknowledgement: no write to wake up for.
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == nil)
        // Lines wait for acknowledgement: the engine looks for it an interval from now.
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: true) == start.advanced(by: Self.interval))

        checkpointer.markChanged()
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == start.advanced(by: Self.interval))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(!FileManager.default.fileExists(atPath: path))
        clock.advance(by: Self.interval - .milliseconds(1))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(!FileManager.default.fileExists(atPath: path) && checkpointer.isDirty)
        clock.advance(by: .milliseconds(1))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(FileManager.default.fileExists(atPath: path) && !checkpointer.isDirty)
        let writtenAt = clock.now
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == nil)

        // The next interval counts from that write; a deadline already passed is now.
        files[0].acknowledgedOffset = 10
        checkpointer.markChanged()
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == writtenAt.advanced(by: Self.interval))
        clock.advance(by: .seconds(1))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(try TailCheckpointFile.decode(try #require(Self.contents(path))).get().first?.offset == 0)
        clock.advance(by: .seconds(60))
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == clock.now)

        // Forced (start and shutdown): at once, whatever the interval.
        await checkpointer.write(files, force: true, now: clock.now)
        #expect(try TailCheckpointFile.decode(try #require(Self.contents(path))).get().first?.offset == 10)
        files[0].acknowledgedOffset = 20
        checkpointer.markChanged()
        await checkpointer.write(files, force: true, now: clock.now)
        #expect(try TailCheckpointFile.decode(try #require(Self.contents(path))).get().first?.offset == 20)
        // Nothing changed: even forced, nothing is written.
        try FileManager.default.removeItem(atPath: path)
        await checkpointer.write(files, force: true, now: clock.now)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("acknowledgements that only trickle are written after 30 intervals; a megabyte of them, or any other change, after one")
    func trickleWaits() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualTickClock()
        let checkpointer = try TailCheckpointer(
            stateDirectory: directory.file("state"), sourceName: "app", interval: Self.interval,
            logger: Logger(label: "test"), now: clock.now)
        let path = try #require(checkpointer.path)
        let files = [Self.followed(1, offset: 0, now: clock.now)]
        checkpointer.markChanged()
        await checkpointer.write(files, force: true, now: clock.now)
        let trickleWait = Self.interval * CheckpointSchedule.trickleIntervals
        func written() throws -> UInt64? { try TailCheckpointFile.decode(try #require(Self.contents(path))).get().first?.offset }

        // A line acknowledged: due after 30 intervals, not after one.
        var lastWrite = clock.now
        files[0].acknowledgedOffset = 200
        checkpointer.acknowledged(bytes: 200)
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == lastWrite.advanced(by: trickleWait))
        // More lines waiting for acknowledgement: the engine still looks an interval from now, to take them.
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: true) == clock.now.advanced(by: Self.interval))
        clock.advance(by: Self.interval)
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(try written() == 0 && checkpointer.isDirty)
        clock.advance(by: trickleWait - Self.interval - .milliseconds(1))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(try written() == 0)
        clock.advance(by: .milliseconds(1))
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(try written() == 200 && !checkpointer.isDirty)
        lastWrite = clock.now

        // Trickles add up: from a megabyte on, one interval.
        files[0].acknowledgedOffset = 200 + UInt64(CheckpointSchedule.trickleBytes)
        checkpointer.acknowledged(bytes: CheckpointSchedule.trickleBytes - 1)
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == lastWrite.advanced(by: trickleWait))
        checkpointer.acknowledged(bytes: 1)
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == lastWrite.advanced(by: Self.interval))
        clock.advance(by: Self.interval)
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(try written() == files[0].acknowledgedOffset)
        lastWrite = clock.now

        // Any other change (here a file followed anew) with a trickle: one interval.
        checkpointer.acknowledged(bytes: 10)
        checkpointer.markChanged()
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == lastWrite.advanced(by: Self.interval))
        // Forced (shutdown): at once.
        files[0].acknowledgedOffset += 10
        await checkpointer.write(files, force: true, now: clock.now)
        #expect(try written() == files[0].acknowledgedOffset && !checkpointer.isDirty)
    }

    @Test("a failed write stays due and is reported once; without a state directory nothing is written")
    func failuresAndMemoryOnly() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let clock = ManualTickClock()
        let logs = LogCapture()
        let checkpointer = try TailCheckpointer(
            stateDirectory: state, sourceName: "app", interval: Self.interval, logger: logs.logger, now: clock.now)
        let path = try #require(checkpointer.path)
        let files = [Self.followed(1, offset: 4, now: clock.now)]

        // The checkpoint directory is replaced by a file: every write fails, and stays due.
        try FileManager.default.removeItem(atPath: state + "/tail")
        writeFile(state + "/tail", "not a directory")
        for _ in 0..<3 {
            checkpointer.markChanged()
            clock.advance(by: Self.interval)
            await checkpointer.write(files, force: false, now: clock.now)
            #expect(checkpointer.isDirty)
        }
        #expect(logs.warnings.count == 1)
        #expect(logs.warnings.first?.message.contains("cannot write the checkpoint file \(path)") == true)
        #expect(checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: false) == clock.now.advanced(by: Self.interval))

        // Writable again: written at the next due time, and said so.
        try FileManager.default.removeItem(atPath: state + "/tail")
        try FileManager.default.createDirectory(atPath: state + "/tail", withIntermediateDirectories: true)
        clock.advance(by: Self.interval)
        await checkpointer.write(files, force: false, now: clock.now)
        #expect(!checkpointer.isDirty)
        #expect(try TailCheckpointFile.decode(try #require(Self.contents(path))).get() == files.map(Self.checkpoint))
        #expect(logs.entries(containing: "is written again").count == 1)

        // No state directory: nothing to read, nothing written, and no write stays due.
        let inMemory = try TailCheckpointer(
            stateDirectory: nil, sourceName: "app", interval: Self.interval, logger: logs.logger, now: clock.now)
        #expect(inMemory.path == nil)
        #expect(inMemory.load().isEmpty)
        inMemory.markChanged()
        await inMemory.write(files, force: true, now: clock.now)
        #expect(!inMemory.isDirty)
        #expect(logs.warnings.count == 1)

        // A state directory that cannot hold the checkpoint directory: an error naming the source.
        writeFile(directory.file("plain"), "x")
        #expect(throws: SourceError.self) {
            _ = try TailCheckpointer(
                stateDirectory: directory.file("plain"), sourceName: "app", interval: Self.interval, logger: logs.logger,
                now: clock.now)
        }
    }
}
