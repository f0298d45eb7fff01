import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// The hand-off between a stream's reading side and its storing task: batches merge while one is being stored, and
/// the reader stores a batch itself only when that cannot reorder or overlap anything.
@Suite struct BatchHandoffTests {
    private static func batch(_ sequences: ClosedRange<UInt64>) -> ReceivedBatch {
        var batch = ReceivedBatch(highestSequence: sequences.upperBound)
        batch.lines = RecordLines(sequences.map { ByteBufferAllocator().buffer(string: #"{"seq":\#($0)}"#) })
        batch.raisesMark = true
        return batch
    }

    @Test("the reader may store a batch itself only while nothing waits and the storer is idle")
    func claimOnlyWhenIdle() async {
        let handoff = BatchHandoff(limitBytes: 1 << 20)
        #expect(handoff.claimIdle(), "idle: the reader stores it")
        #expect(!handoff.claimIdle(), "a batch claimed by the reader is being stored")
        handoff.storedByCaller()

        await handoff.put(Self.batch(1...2))
        #expect(!handoff.claimIdle(), "a batch waits for the storer: the next must follow it")
        let taken = await handoff.take()
        #expect(taken?.highestSequence == 2)
        #expect(!handoff.claimIdle(), "the storer is storing what it took")

        // The storer comes back for more: its batch counts as stored, so the reader may store the next itself.
        let storer = Task { await handoff.take() }
        #expect(await eventually(timeout: .seconds(30)) { handoff.claimIdle() })
        handoff.storedByCaller()
        await handoff.put(Self.batch(3...3))
        #expect(await storer.value?.highestSequence == 3, "a batch handed over after the reader's own wakes the storer")
    }

    @Test("batches handed over while the storer is busy wait merged, in order")
    func waitingBatchesMerge() async {
        let handoff = BatchHandoff(limitBytes: 1 << 20)
        await handoff.put(Self.batch(1...1))
        let first = await handoff.take()
        await handoff.put(Self.batch(2...3))
        await handoff.put(Self.batch(4...4))
        #expect(!handoff.claimIdle())
        let merged = await handoff.take()
        #expect(first?.lines.count == 1)
        #expect(merged?.highestSequence == 4)
        #expect(merged?.lines.count == 3)
        handoff.finish()
        #expect(await handoff.take() == nil)
    }
}
