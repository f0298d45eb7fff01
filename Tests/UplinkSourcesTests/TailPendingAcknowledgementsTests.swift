import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// The tailer's compact queue of lines waiting for acknowledgement behaves exactly like one (sequence, offset) pair
/// per line searched for the last sequence covered.
@Suite("Tail pending acknowledgements")
struct TailPendingAcknowledgementsTests {
    /// The straightforward model: every line's pair, the oldest waiting first.
    struct Model {
        var lines: [(sequence: UInt64, offset: UInt64)] = []
        mutating func acknowledge(through acknowledged: UInt64) -> UInt64? {
            guard let last = lines.lastIndex(where: { $0.sequence <= acknowledged }) else { return nil }
            let offset = lines[last].offset
            lines.removeFirst(last + 1)
            return offset
        }
    }

    @Test(.computeBound, arguments: 1...24, [7, TailPendingAcknowledgements.defaultBlockEntries])
    func randomInterleavingsMatchTheModel(seed: UInt64, blockEntries: Int) {
        var random = SplitMix64(seed: seed)
        var queue = TailPendingAcknowledgements(blockEntries: blockEntries)
        var model = Model()
        var sequence: UInt64 = UInt64.random(in: 0...5, using: &random)
        var offset: UInt64 = 0
        var acknowledged: UInt64 = 0
        for _ in 0..<20_000 {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<70:  // a line, usually the next sequence, sometimes after other sources' records
                sequence += Int.random(in: 0..<10, using: &random) == 0 ? UInt64.random(in: 2...50, using: &random) : 1
                offset += UInt64.random(in: 1...300, using: &random)
                queue.append(sequence: sequence, offset: offset)
                model.lines.append((sequence, offset))
            case 70..<75:  // a line left out (oversize): the sequence of the line before it
                offset += UInt64.random(in: 1...100_000, using: &random)
                queue.append(sequence: sequence, offset: offset)
                model.lines.append((sequence, offset))
            case 75..<82:  // a batch of lines stored one after the other, queued together
                let first = sequence + (Int.random(in: 0..<4, using: &random) == 0 ? UInt64.random(in: 2...50, using: &random) : 1)
                var offsets: [UInt64] = []
                for _ in 0..<Int.random(in: 0...min(blockEntries * 2 + 3, 60), using: &random) {
                    // Now and then a line so long that the batch passes 4 GiB from its run's base.
                    offset += Int.random(in: 0..<200, using: &random) == 0 ? UInt64(UInt32.max) / 3 : UInt64.random(in: 1...300, using: &random)
                    offsets.append(offset)
                }
                queue.append(firstSequence: first, offsets: offsets)
                for (index, end) in offsets.enumerated() { model.lines.append((first + UInt64(index), end)) }
                if !offsets.isEmpty { sequence = first + UInt64(offsets.count - 1) }
            default:  // an acknowledgement, anywhere up to what was sent (or a repeat of the last)
                acknowledged = max(acknowledged, UInt64.random(in: acknowledged...(sequence + 1), using: &random))
                let expected = model.acknowledge(through: acknowledged)
                #expect(queue.acknowledge(through: acknowledged) == expected, "seed \(seed)")
            }
            #expect(queue.isEmpty == model.lines.isEmpty)
        }
        let expected = model.acknowledge(through: .max)
        #expect(queue.acknowledge(through: .max) == expected)
        #expect(queue.isEmpty)
    }

    @Test("Memory follows the lines waiting: acknowledged blocks are given up, one is kept for reuse")
    func blocksFollowTheBacklog() {
        var queue = TailPendingAcknowledgements(blockEntries: 1000)
        for line in 1...100_000 { queue.append(sequence: UInt64(line), offset: UInt64(line) * 200) }
        #expect(queue.allocatedBlocks == 100)
        #expect(queue.acknowledge(through: 90_500) == 90_500 * 200)
        #expect(queue.allocatedBlocks == 11)  // lines 90,501…100,000 in 10 blocks, and the spare
        #expect(queue.acknowledge(through: 100_000) == 100_000 * 200)
        #expect(queue.isEmpty && queue.allocatedBlocks == 1)
        for line in 100_001...100_500 { queue.append(sequence: UInt64(line), offset: UInt64(line) * 200) }
        #expect(queue.allocatedBlocks == 1, "the spare block was taken again")
        #expect(queue.acknowledge(through: 100_250) == 100_250 * 200)
    }

    @Test func aRunLongerThan4GiBStartsANewRun() {
        var queue = TailPendingAcknowledgements()
        queue.append(sequence: 1, offset: 10)
        queue.append(sequence: 2, offset: 10 + (1 << 33))
        queue.append(sequence: 3, offset: 20 + (1 << 33))
        #expect(queue.acknowledge(through: 1) == 10)
        #expect(queue.acknowledge(through: 2) == 10 + (1 << 33))
        #expect(queue.acknowledge(through: 2) == nil)
        #expect(queue.acknowledge(through: 9) == 20 + (1 << 33))
        #expect(queue.isEmpty)
    }
}
