import Foundation
import Logging
import NIOCore
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// A forwarder stopped right after a delivery keeps that delivery: its cursor reaches the disk, so the next start
/// does not deliver the batch again.
@Suite struct ForwarderStopTests {
    /// Takes every batch, and cancels the forwarder's task from inside the delivery: the stop arrives after the store
    /// took the records and before the cursor is written.
    private final class StoppingSink: ForwardingSink {
        let delivered = Mutex(0)
        func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
            delivered.withLock { $0 += batch.count }
            withUnsafeCurrentTask { $0?.cancel() }
        }
    }

    @Test("a delivery that the stop follows at once still moves the cursor on disk")
    func cursorPersistedWhenStoppedAfterDelivery() async throws {
        try await withTemporaryDirectory { directory in
            let sinkConfiguration = SinkConfiguration(
                name: "file", kind: JSONLSinkConfig(path: directory + "/out.jsonl"), batchLinger: .zero)
            var configuration = CollectorConfiguration(dataDirectory: directory, stdoutSink: false)
            configuration.sinks = [sinkConfiguration]
            let storage = try await Storage.open(
                configuration: configuration, marks: MarkTable(), recorder: StatisticsRecorder(), logger: Logger(label: "test"))
            let lines = (1...5).map { ByteBufferAllocator().buffer(string: #"{"seq":\#($0),"ts":1,"src":"s","log":"x"}"#) }
            try await storage.commit(Storage.Commit(
                batch: CollectorBatch(stream: StreamKey(agent: "a", epoch: 1), lines: RecordLines(lines), highestSequence: 5),
                rejects: []))
            let sink = StoppingSink()
            let forwarder = try Forwarder(
                configuration: sinkConfiguration, sink: sink, log: storage.log,
                cursorDirectory: configuration.cursorDirectory, deadLetterDirectory: configuration.deadLetterDirectory,
                logger: Logger(label: "test"))
            await Task { await forwarder.run() }.value
            #expect(sink.delivered.withLock { $0 } == 5)
            #expect(try CursorFile.read(forwarder.cursorPath) == storage.log.committedEnd)
            await storage.close()
        }
    }
}
