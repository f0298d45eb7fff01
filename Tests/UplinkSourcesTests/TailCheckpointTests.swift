import Foundation
import Logging
import Testing
import UplinkCore
import UplinkFiles
import UplinkTestSupport

@testable import UplinkSources

@Suite("Tail checkpoints")
struct TailCheckpointTests {
    /// The checkpoints the file and its changes file say together, nil when the file is missing or does not parse.
    static func checkpoints(_ stateDirectory: String, name: String = "tail-test") -> [TailCheckpoint]? {
        let path = TailCheckpointFile.path(stateDirectory: stateDirectory, sourceName: name)
        guard let data = FileManager.default.contents(atPath: path),
            let entries = try? TailCheckpointFile.decode(Array(data)).get()
        else { return nil }
        return TailCheckpointChanges.merge(entries, checkpointFileBytes: Array(data), checkpointFile: path).checkpoints
    }

    @Test("the changes file round-trips, applies only to the checkpoint file it was written against, and damage is detected")
    func changesFormat() throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let a = TailCheckpoint(
            inode: FileIdentity(device: 1, inode: 10), fingerprint: .empty, originID: 5, offset: 100, path: "/l/a.log")
        let b = TailCheckpoint(
            inode: FileIdentity(device: 1, inode: 11), fingerprint: .empty, originID: 6, offset: 200, path: "/l/b.log")
        let fileBytes = TailCheckpointFile.encode([a, b])
        let base = TailCheckpointChanges.contentHash(fileBytes)
        var movedA = a
        movedA.offset = 150
        let c = TailCheckpoint(
            inode: FileIdentity(device: 1, inode: 12), fingerprint: .empty, originID: 7, offset: 0, path: "/l/c.log")
        let changes = TailCheckpointChanges.encode(base: base, lines: [movedA, c].map(TailCheckpointFile.encodeLine))
        let decoded = try TailCheckpointChanges.decode(changes).get()
        #expect(decoded.base == base && decoded.checkpoints == [movedA, c])
        for length in stride(from: 0, to: changes.count - 1, by: 5) {
            if case .success = TailCheckpointChanges.decode(Array(changes[0..<length])) {
                Issue.record("accepted a changes file cut at \(length) bytes")
            }
        }
        #expect(throws: (any Error).self) { try TailCheckpointChanges.decode(fileBytes).get() }

        let path = directory.file("x.checkpoints")
        let changesPath = TailCheckpointChanges.path(checkpointFile: path)
        // None: the file alone, no problem.
        var merged = TailCheckpointChanges.merge([a, b], checkpointFileBytes: fileBytes, checkpointFile: path)
        #expect(merged.checkpoints == [a, b] && merged.problem == nil)
        // Written against this content: a moved, c added.
        writeFile(changesPath, String(decoding: changes, as: UTF8.self))
        merged = TailCheckpointChanges.merge([a, b], checkpointFileBytes: fileBytes, checkpointFile: path)
        #expect(merged.checkpoints == [movedA, b, c] && merged.problem == nil)
        // The checkpoint file was rewritten since (a crash before the changes file was removed): ignored, silently.
        let rewritten = TailCheckpointFile.encode([movedA, b, c])
        merged = TailCheckpointChanges.merge([movedA, b, c], checkpointFileBytes: rewritten, checkpointFile: path)
        #expect(merged.checkpoints == [movedA, b, c] && merged.problem == nil)
        // Corrupt: the file alone, and the reason.
        writeFile(changesPath, "uplink-tail-checkpoint-changes 1 \(TailCheckpointFile.hex(base))\n1 10 0 zz")
        merged = TailCheckpointChanges.merge([a, b], checkpointFileBytes: fileBytes, checkpointFile: path)
        #expect(merged.checkpoints == [a, b] && merged.problem?.contains("corrupt") == true)
    }

    @Test("with many files at rest, a checkpoint writes only the files that moved; a restart resumes each where it stood")
    func fewChangesAmongManyFiles() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let logs = directory.file("logs")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let names = (0..<40).map { String(format: "f%02d.log", $0) }
        for name in names { writeFile(logs + "/" + name, "one\ntwo\n") }
        let config = tailTestConfig([logs + "/*.log"])
        let checkpointPath = TailCheckpointFile.path(stateDirectory: state, sourceName: "tail-test")
        let changesPath = TailCheckpointChanges.path(checkpointFile: checkpointPath)
        func offset(_ name: String) -> UInt64? {
            Self.checkpoints(state)?.first { $0.path == logs + "/" + name }?.offset
        }

        let sink = RecordingSink(acknowledgesOnEmit: false)
        sink.acknowledge(through: .max)
        // Time is the test's: polls and checkpoint intervals pass only when the clock is moved on.
        let clock = ManualTickClock()
        let tail = RunningTail(config, sink: sink, stateDirectory: state, clock: clock)
        #expect(await clock.advance(by: .milliseconds(20), until: {
            Self.checkpoints(state)?.count == 40 && Self.checkpoints(state)?.allSatisfy { $0.offset == 8 } == true
        }))
        let fileBefore = FileManager.default.contents(atPath: checkpointPath)
        let inodeBefore = FileStatus(path: checkpointPath)?.identity

        // One file moves: only its entry is written, to the changes file; the checkpoint file is left alone.
        let writer = TailTestWriter(logs + "/f07.log")
        writer.write("three\n")
        #expect(await clock.advance(by: .milliseconds(20), until: { offset("f07.log") == 14 }))
        #expect(await clock.pass(10, of: .milliseconds(50)))  // ten checkpoint intervals
        #expect(FileManager.default.contents(atPath: checkpointPath) == fileBefore)
        #expect(FileStatus(path: checkpointPath)?.identity == inodeBefore)
        let changes = try TailCheckpointChanges.decode(Array(try #require(FileManager.default.contents(atPath: changesPath)))).get()
        #expect(changes.checkpoints.map(\.path) == [logs + "/f07.log"] && changes.checkpoints.first?.offset == 14)
        try await tail.stop()
        #expect(FileManager.default.contents(atPath: checkpointPath) == fileBefore)

        // A restart reads both: nothing is read again, each file goes on where it stood.
        writer.write("four\n")
        writeFile(logs + "/f20.log", "one\ntwo\nlater\n")
        let second = RecordingSink(acknowledgesOnEmit: false)
        second.acknowledge(through: .max)
        let secondClock = ManualTickClock()
        let again = RunningTail(config, sink: second, stateDirectory: state, clock: secondClock)
        #expect(await eventually { second.count >= 2 })
        #expect(await secondClock.pass(10, of: .milliseconds(50)))  // time for a line read again to show
        #expect(messages(second.records).sorted() == ["four", "later"])

        // Most files move: the checkpoint file is rewritten whole and the changes file removed.
        for name in names.prefix(30) { TailTestWriter(logs + "/" + name).write("more\n") }
        #expect(await secondClock.advance(by: .milliseconds(20), until: {
            second.count >= 32 && offset("f00.log") == 13 && !FileManager.default.fileExists(atPath: changesPath)
        }))
        #expect(FileManager.default.contents(atPath: checkpointPath) != fileBefore)
        try await again.stop()
        #expect(Self.checkpoints(state)?.count == 40)
        #expect(offset("f07.log") == 24 && offset("f20.log") == 19 && offset("f39.log") == 8)
    }

    @Test("the file format round-trips, and damage is detected")
    func format() throws {
        let entries = [
            TailCheckpoint(
                inode: FileIdentity(device: 2049, inode: 123_456), fingerprint: TailFingerprint(length: 256, hash: 0xdead_beef),
                originID: UInt64(Int64.max), offset: 1 << 40, path: "/var/log/with space\\and\nnewline.log"),
            TailCheckpoint(
                inode: FileIdentity(device: 1, inode: 2), fingerprint: .empty, originID: 1, offset: 0, path: "rel.log"),
        ]
        let encoded = TailCheckpointFile.encode(entries)
        #expect(try TailCheckpointFile.decode(encoded).get() == entries)
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.hasPrefix("uplink-tail-checkpoints 1\n2049 123456 256 00000000deadbeef 9223372036854775807 "))
        #expect(text.hasSuffix("\nend 2\n"))

        // Cut anywhere: never accepted.
        for length in stride(from: 0, to: encoded.count - 1, by: 7) {
            if case .success = TailCheckpointFile.decode(Array(encoded[0..<length])) {
                Issue.record("accepted a checkpoint file cut at \(length) bytes")
            }
        }
        #expect(throws: (any Error).self) { try TailCheckpointFile.decode(Array("garbage\n".utf8)).get() }
        #expect(throws: (any Error).self) {
            try TailCheckpointFile.decode(Array("uplink-tail-checkpoints 1\n1 2 3 zz 4 5 /x\nend 1\n".utf8)).get()
        }
        #expect(throws: (any Error).self) { try TailCheckpointFile.decode([0xff, 0xfe, 0x00]).get() }
        #expect(TailCheckpointFile.path(stateDirectory: "/state", sourceName: "app logs/x") == "/state/tail/app_logs_x.checkpoints")
    }

    @Test("checkpoints advance only on acknowledgement; a restart resumes at the acknowledged offset")
    func advanceOnAcknowledgement() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let path = directory.file("app.log")
        let writer = TailTestWriter(path)
        for index in 0..<10 { writer.write("line \(index)\n") }  // 7 bytes each

        let sink = RecordingSink(acknowledgesOnEmit: false)
        // Time is the test's: the checkpoint interval (50 ms) passes only when the clock is moved on.
        let clock = ManualTickClock()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, stateDirectory: state, clock: clock)
        #expect(await eventually { sink.count >= 10 })
        #expect(await eventually { Self.checkpoints(state)?.count == 1 })
        #expect(await clock.pass(10, of: .milliseconds(50)))  // ten checkpoint intervals
        #expect(Self.checkpoints(state)?.first?.offset == 0)

        sink.acknowledge(through: 4)
        #expect(await clock.advance(by: .milliseconds(50), until: { Self.checkpoints(state)?.first?.offset == 28 }))
        #expect(await clock.pass(10, of: .milliseconds(50)))
        #expect(Self.checkpoints(state)?.first?.offset == 28)
        sink.acknowledge(through: 6)
        #expect(await clock.advance(by: .milliseconds(50), until: { Self.checkpoints(state)?.first?.offset == 42 }))
        let origin = try #require(sink.records.first?.logLine?.origin?.id)
        #expect(Self.checkpoints(state)?.first?.originID == origin)
        #expect(Self.checkpoints(state)?.first?.path == path)
        // Written atomically: no temporary file is left behind.
        let tailDirectory = state + "/tail"
        #expect(try FileManager.default.contentsOfDirectory(atPath: tailDirectory) == ["tail-test.checkpoints"])

        // Lines 6…9 are never acknowledged: the shutdown waits (5 s at most) and keeps the checkpoint at line 6.
        try await tail.stop()
        #expect(Self.checkpoints(state)?.first?.offset == 42)
        writer.write("line 10\nline 11\n")

        let second = RecordingSink(acknowledgesOnEmit: false)
        second.acknowledge(through: .max)
        let secondClock = ManualTickClock()
        let again = RunningTail(
            tailTestConfig([path], startAt: .end), sink: second, stateDirectory: state, clock: secondClock)
        #expect(await eventually { second.count >= 6 })
        #expect(await secondClock.pass(10, of: .milliseconds(50)))  // time for a line too many to show
        try await again.stop()
        #expect(messages(second.records) == (6..<12).map { "line \($0)" })
        #expect(second.records.allSatisfy { $0.logLine?.origin?.id == origin })
        #expect(second.records.first?.logLine?.origin?.offset == 49)
        #expect(Self.checkpoints(state)?.first?.offset == 7 * 10 + 8 * 2)
    }

    @Test("a file renamed while the agent was down resumes under its new name; the new file is read whole")
    func renamedWhileStopped() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let path = directory.file("app.log")
        writeFile(path, "a1\na2\n")
        let sink = RecordingSink()
        let config = tailTestConfig([path + "*"], startAt: .end)
        let first = RunningTail(config, sink: sink, stateDirectory: state)
        #expect(await eventually { Self.checkpoints(state)?.first?.offset == 6 })
        try await first.stop()
        #expect(sink.count == 0)  // start_at: end

        let writer = TailTestWriter(path)
        writer.write("a3\n")
        writer.close()
        rename(path, path + ".1")
        writeFile(path, "b1\n")

        let second = RecordingSink()
        let clock = ManualTickClock()
        let again = RunningTail(config, sink: second, stateDirectory: state, clock: clock)
        #expect(await eventually { second.count >= 2 })
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line read twice to show
        try await again.stop()
        #expect(Set(messages(second.records)) == ["a3", "b1"])
        #expect(second.records.first { $0.tailMessage == "a3" }?.tailField("path") == path + ".1")
        #expect(second.records.first { $0.tailMessage == "a3" }?.logLine?.origin?.offset == 9)
    }

    @Test("a new file with a reused inode is not mistaken for the checkpointed one (fingerprint)")
    func inodeReuse() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        let path = directory.file("app.log")
        writeFile(path, "old content line 1\nold content line 2\n")
        let oldInode = FileStatus(path: path)!.identity
        let sink = RecordingSink()
        let first = RunningTail(tailTestConfig([path]), sink: sink, stateDirectory: state)
        #expect(await eventually { Self.checkpoints(state)?.first?.offset == 38 })
        try await first.stop()
        let oldOrigin = try #require(sink.records.first?.logLine?.origin?.id)

        unlink(path)
        writeFile(path, "new\n")
        let reused = FileStatus(path: path)!.identity == oldInode

        let second = RecordingSink()
        let clock = ManualTickClock()
        let again = RunningTail(tailTestConfig([path], startAt: .end), sink: second, stateDirectory: state, clock: clock)
        #expect(await eventually { second.count >= 1 })
        #expect(await clock.pass(10, of: .milliseconds(50)))  // time for a line too many to show
        try await again.stop()
        // Read from its start (not at the old offset 38, past its end; not skipped by start_at: end).
        #expect(messages(second.records) == ["new"])
        #expect(second.records.first?.logLine?.origin?.id != oldOrigin)
        #expect(Self.checkpoints(state)?.count == 1)
        #expect(Self.checkpoints(state)?.first?.originID != oldOrigin)
        if !reused { print("note: the file system did not reuse the inode; the fingerprint check is shown below") }

        // The fingerprint check on its own: same inode, other first bytes.
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TailFingerprint.maximumLength, alignment: 8)
        defer { scratch.deallocate() }
        let newPrint = TailFingerprint.current(descriptor: fd, scratch: scratch)
        #expect(newPrint.length == 4)
        #expect(newPrint.verified(descriptor: fd, scratch: scratch) == newPrint)
        let oldPrint = Array("old content line 1\nold content line 2\n".utf8).withUnsafeBytes {
            TailFingerprint(length: $0.count, hash: TailFingerprint.fnv1a($0))
        }
        #expect(oldPrint.verified(descriptor: fd, scratch: scratch) == nil)
        let shorterSame = Array("ne".utf8).withUnsafeBytes { TailFingerprint(length: 2, hash: TailFingerprint.fnv1a($0)) }
        #expect(shorterSame.verified(descriptor: fd, scratch: scratch) == newPrint)
    }

    @Test("a corrupt checkpoint file gives one warning and is ignored")
    func corruptFile() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        try FileManager.default.createDirectory(atPath: state + "/tail", withIntermediateDirectories: true)
        writeFile(TailCheckpointFile.path(stateDirectory: state, sourceName: "tail-test"), "uplink-tail-checkpoints 1\n\u{0}\u{1}garbage")
        let path = directory.file("app.log")
        writeFile(path, "one\ntwo\n")
        let sink = RecordingSink()
        let logs = LogCapture()
        let tail = RunningTail(tailTestConfig([path]), sink: sink, stateDirectory: state, logger: logs.logger)
        #expect(await eventually { sink.count >= 2 })
        #expect(await eventually { Self.checkpoints(state)?.first?.offset == 8 })
        try await tail.stop()
        #expect(messages(sink.records) == ["one", "two"])
        #expect(logs.warnings.filter { $0.message.contains("corrupt") }.count == 1)
    }

    @Test("checkpoints of files that are gone are dropped; an unusable state directory is a clear error")
    func dropsGoneFiles() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        writeFile(directory.file("a.log"), "a\n")
        writeFile(directory.file("b.log"), "b\n")
        let config = tailTestConfig([directory.path + "/*.log"])
        let first = RunningTail(config, sink: RecordingSink(), stateDirectory: state)
        #expect(await eventually { Self.checkpoints(state)?.count == 2 })
        try await first.stop()
        unlink(directory.file("a.log"))
        let second = RunningTail(config, sink: RecordingSink(), stateDirectory: state)
        #expect(await eventually { Self.checkpoints(state)?.map(\.path) == [directory.file("b.log")] })
        try await second.stop()

        writeFile(directory.file("not-a-directory"), "x")
        let source = TailSource(name: "x", config: config)
        await #expect(throws: SourceError.self) {
            try await source.run(
                context: SourceContext(
                    sink: RecordingSink(), logger: Logger(label: "t"), stateDirectory: directory.file("not-a-directory")))
        }
    }
}

@Suite("Tail line splitting")
struct TailLineSplitterTests {
    /// Splits `text` fed in pieces of `piece` bytes.
    static func split(_ text: [UInt8], piece: Int, max: Int = 1000) -> [(String, UInt64, Int)] {
        var splitter = TailLineSplitter(maxLineBytes: max)
        var lines: [(String, UInt64, Int)] = []
        var offset = 0
        while offset < text.count {
            let end = min(text.count, offset + piece)
            text[offset..<end].withUnsafeBytes { chunk in
                splitter.split(chunk, base: UInt64(offset)) { message, endOffset, length in
                    lines.append((String(decoding: message, as: UTF8.self), endOffset, length))
                }
            }
            offset = end
        }
        splitter.flushCarry(endOffset: UInt64(text.count)) { message, endOffset, length in
            lines.append((String(decoding: message, as: UTF8.self), endOffset, length))
        }
        return lines
    }

    @Test("lines are the same whatever the chunk boundaries")
    func chunkBoundaries() {
        let text = Array("alpha\r\nbeta\n\n\r\ngamma-is-longer\rx\nend".utf8)
        let whole = Self.split(text, piece: text.count)
        #expect(whole.map(\.0) == ["alpha", "beta", "", "", "gamma-is-longer\rx", "end"])
        #expect(whole.map(\.1) == [7, 12, 13, 15, 33, 36])
        for piece in 1...text.count {
            let pieces = Self.split(text, piece: piece)
            #expect(pieces.map(\.0) == whole.map(\.0), "piece \(piece)")
            #expect(pieces.map(\.1) == whole.map(\.1), "piece \(piece)")
        }
    }

    @Test("long lines are cut, with their full length, across chunks")
    func longLines() {
        let text = Array((String(repeating: "a", count: 25) + "\r\n" + String(repeating: "b", count: 10) + "\r\nc\n").utf8)
        for piece in [1, 3, 7, 100] {
            let lines = Self.split(text, piece: piece, max: 10)
            #expect(lines.map(\.0) == [String(repeating: "a", count: 10), String(repeating: "b", count: 10), "c"])
            #expect(lines.map(\.2) == [25, 10, 1])
        }
    }
}
