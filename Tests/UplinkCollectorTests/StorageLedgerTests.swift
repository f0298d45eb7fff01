import Foundation
import Logging
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// When the storage writes the marks ledger: once the log has run `Storage.ledgerLagBytes` ahead of it, before the log
/// rolls to a new segment, and at close; and that whatever the ledger lacks is recovered from the log.
@Suite struct StorageLedgerTests {
    /// A fresh data directory (removed when the tests end) without standard output.
    private static func configuration(jsonl: Bool = true) throws -> CollectorConfiguration {
        CollectorConfiguration(dataDirectory: try TestDirectories.make("uplink-ledger"), stdoutSink: false, jsonlSink: jsonl)
    }

    private static func open(_ configuration: CollectorConfiguration) async throws -> (Storage, MarkTable) {
        let marks = MarkTable()
        let storage = try await Storage.open(
            configuration: configuration, marks: marks, recorder: StatisticsRecorder(), logger: Logger(label: "test"))
        return (storage, marks)
    }

    private static func commit(_ storage: Storage, _ agent: String, from first: UInt64, count: Int, padding: Int = 40) async throws {
        let batch = logBatch(agent, from: first, count: count, padding: padding)
        try await storage.commit(Storage.Commit(batch: batch, rejects: []))
    }

    private static func ledger(_ configuration: CollectorConfiguration) throws -> MarksLedger.Contents {
        try MarksLedger.read(path: configuration.marksFile)
    }

    private static func fileSize(_ path: String) throws -> Int64 {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64)
    }

    @Test("small groups leave the ledger behind until the log is ledgerLagBytes ahead of it; close writes the rest")
    func ledgerFollowsTheLog() async throws {
        let configuration = try Self.configuration()
        let (storage, marks) = try await Self.open(configuration)
        let atStart = try Self.ledger(configuration)

        try await Self.commit(storage, "a", from: 1, count: 3)
        try await Self.commit(storage, "b", from: 1, count: 2)
        try await Self.commit(storage, "a", from: 4, count: 1)
        #expect(marks.snapshot() == [StreamKey(agent: "a", epoch: 1): 4, StreamKey(agent: "b", epoch: 1): 2])
        #expect(try Self.ledger(configuration).validLines == atStart.validLines, "small groups do not write the ledger")

        // About 1.1 MiB more: the log is now more than the lag ahead of the ledger.
        try await Self.commit(storage, "b", from: 3, count: 1_100, padding: 1_000)
        let caughtUp = try Self.ledger(configuration)
        let logSize = try Self.fileSize(configuration.recordsFile)
        #expect(caughtUp.validLines == atStart.validLines + 2, "one line per stream whose mark rose")
        #expect(caughtUp.marks == [StreamKey(agent: "a", epoch: 1): 4, StreamKey(agent: "b", epoch: 1): 1_102])
        #expect(caughtUp.lastRecordsSize == logSize)

        try await Self.commit(storage, "a", from: 5, count: 1)
        #expect(try Self.ledger(configuration).validLines == caughtUp.validLines)
        await storage.close()
        let closed = try Self.ledger(configuration)
        #expect(closed.validLines == caughtUp.validLines + 1)
        #expect(closed.marks[StreamKey(agent: "a", epoch: 1)] == 5)
        #expect(closed.lastRecordsSize == (try Self.fileSize(configuration.recordsFile)))
    }

    @Test("marks the ledger lacks when the process ends without closing are recovered from the log")
    func unledgeredMarksAreRecovered() async throws {
        let configuration = try Self.configuration()
        let (crashed, _) = try await Self.open(configuration)
        try await Self.commit(crashed, "a", from: 1, count: 3)
        try await Self.commit(crashed, "a", from: 4, count: 2)
        #expect(try Self.ledger(configuration).marks[StreamKey(agent: "a", epoch: 1)] == nil, "not ledgered yet")

        // What a SIGKILL leaves: the records written, the ledger behind. A second storage recovers from the files.
        let (recovered, marks) = try await Self.open(configuration)
        #expect(marks.snapshot() == [StreamKey(agent: "a", epoch: 1): 5])
        #expect(try Self.ledger(configuration).marks == [StreamKey(agent: "a", epoch: 1): 5], "recovery compacts the ledger")
        await recovered.close()
        await crashed.close()
    }

    @Test("the ledger is written before the log rolls, so a closed segment never holds records the ledger lacks")
    func ledgerWrittenBeforeARoll() async throws {
        var configuration = try Self.configuration(jsonl: false)
        configuration.log.segmentBytes = 1_024
        let (storage, _) = try await Self.open(configuration)
        try await Self.commit(storage, "a", from: 1, count: 20)  // over 1 KiB: the next write rolls
        #expect(try Self.ledger(configuration).marks[StreamKey(agent: "a", epoch: 1)] == nil)
        let firstSegment = try #require(try CollectorLog.listSegments(configuration.logDirectory).last)
        let firstEnd = firstSegment.base + (try Self.fileSize(firstSegment.path))

        try await Self.commit(storage, "b", from: 1, count: 1)
        let segments = try CollectorLog.listSegments(configuration.logDirectory)
        #expect(segments.count == 2)
        #expect(segments.last?.base == firstEnd)
        let ledger = try Self.ledger(configuration)
        #expect(ledger.marks[StreamKey(agent: "a", epoch: 1)] == 20, "the closed segment's marks are in the ledger")
        #expect(ledger.marks[StreamKey(agent: "b", epoch: 1)] == nil, "the new segment's are not yet")
        #expect(ledger.lastRecordsSize == firstEnd)
        await storage.close()
    }
}
