/// The lines of one file incarnation that were handed to the buffer and wait for the collector's acknowledgement:
/// for each, its sequence number and the offset just past it, so that an acknowledgement through any sequence moves
/// the checkpoint to exactly the last line it covers.
///
/// Stored compactly, because a backlog can put a whole ring of lines here (335,000 lines of 200 bytes in a 64 MiB
/// ring): lines with consecutive sequence numbers form a run that keeps its first sequence and base offset once,
/// and each line only its end as 4 bytes past the base. The ends live in blocks of `blockEntries` (64 KiB), dropped
/// from the front as lines are acknowledged: memory follows the lines waiting (1.3 MiB for that ring), and no array
/// of a whole ring's lines is ever copied to grow (one contiguous array peaked at 4 MiB during the copy that
/// doubled it).
struct TailPendingAcknowledgements {
    /// Lines `lineStart..<lineEnd` (numbered since the queue was created or emptied), with sequences
    /// `firstSequence`, `firstSequence + 1`, ….
    private struct Run {
        var firstSequence: UInt64
        var baseOffset: UInt64
        var lineStart: Int
        var lineEnd: Int
    }

    /// Line ends per block: 16,384 (64 KiB, below glibc's threshold for a mapping of its own, so freed blocks are
    /// reused rather than unmapped and faulted in again).
    static let defaultBlockEntries = 16_384

    private let blockEntries: Int
    private var runs: [Run] = []
    /// Each line's end offset minus its run's base offset. Every block but the last is full; `blocks[0][0]` is line
    /// `firstBlockLine`.
    private var blocks: [[UInt32]] = []
    private var firstBlockLine = 0
    /// One past the newest line.
    private var endLine = 0
    /// An emptied block kept for the next one needed.
    private var spareBlock: [UInt32]?
    /// The oldest run and line not acknowledged yet.
    private var runHead = 0
    private var lineHead = 0

    init(blockEntries: Int = Self.defaultBlockEntries) {
        precondition(blockEntries > 0)
        self.blockEntries = blockEntries
    }

    /// Whether lines wait for acknowledgement.
    var isEmpty: Bool { lineHead == endLine }

    /// Blocks of line ends allocated, the spare included.
    var allocatedBlocks: Int { blocks.count + (spareBlock == nil ? 0 : 1) }

    /// Queues a line: handled once `sequence` is acknowledged; `offset` is just past it. Sequences never decrease
    /// (a line left out, such as an oversize one, repeats the sequence of the line before it).
    mutating func append(sequence: UInt64, offset: UInt64) {
        if runHead < runs.count, let last = runs.last,
            sequence == last.firstSequence + UInt64(last.lineEnd - last.lineStart),
            offset >= last.baseOffset, offset - last.baseOffset <= UInt64(UInt32.max)
        {
            appendEnd(UInt32(offset - last.baseOffset))
            runs[runs.count - 1].lineEnd += 1
            return
        }
        runs.append(Run(firstSequence: sequence, baseOffset: offset, lineStart: endLine, lineEnd: endLine + 1))
        appendEnd(0)
    }

    /// Queues lines with consecutive sequences from `firstSequence`, the `i`th ending at `offsets[i]`: what
    /// `append(sequence:offset:)` of each would do, with the newest run looked at once and the ends copied in runs,
    /// since the tailer queues every line it reads. The offsets never decrease (they end consecutive lines of a file).
    mutating func append(firstSequence: UInt64, offsets: some RandomAccessCollection<UInt64>) {
        guard let first = offsets.first, let last = offsets.last else { return }
        append(sequence: firstSequence, offset: first)
        var index = offsets.index(after: offsets.startIndex)
        guard index < offsets.endIndex else { return }
        // The first line extends the newest run or starts one; the rest extend it, unless they reach 4 GiB past its
        // base (each line's own check then decides).
        let base = runs[runs.count - 1].baseOffset
        guard last >= first, last - base <= UInt64(UInt32.max) else {
            var sequence = firstSequence
            while index < offsets.endIndex {
                sequence += 1
                append(sequence: sequence, offset: offsets[index])
                index = offsets.index(after: index)
            }
            return
        }
        let count = offsets.distance(from: index, to: offsets.endIndex)
        while index < offsets.endIndex {
            startBlockIfFull()
            let room = blockEntries - blocks[blocks.count - 1].count
            let end = offsets.index(index, offsetBy: min(room, offsets.distance(from: index, to: offsets.endIndex)))
            blocks[blocks.count - 1].append(contentsOf: offsets[index..<end].lazy.map { UInt32(truncatingIfNeeded: $0 &- base) })
            index = end
        }
        runs[runs.count - 1].lineEnd += count
        endLine += count
    }

    /// Removes the lines whose sequences are at most `acknowledged`; returns the offset just past the last of them,
    /// or nil when none was waiting.
    mutating func acknowledge(through acknowledged: UInt64) -> UInt64? {
        // The head run starts at the oldest waiting line (kept so below), so this says whether any line is covered.
        guard runHead < runs.count, runs[runHead].firstSequence <= acknowledged else { return nil }
        // The last run starting at or before `acknowledged` (first sequences never decrease): binary search.
        var low = runHead
        var high = runs.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if runs[middle].firstSequence <= acknowledged { low = middle } else { high = middle - 1 }
        }
        let run = runs[low]
        let covered = Int(min(acknowledged - run.firstSequence, UInt64(run.lineEnd - run.lineStart - 1)))
        let line = run.lineStart + covered
        let offset = run.baseOffset + UInt64(end(ofLine: line))
        lineHead = line + 1
        if lineHead == run.lineEnd {
            runHead = low + 1
        } else {
            runHead = low
            runs[low].firstSequence += UInt64(lineHead - run.lineStart)
            runs[low].lineStart = lineHead
        }
        compact()
        return offset
    }

    mutating func removeAll() {
        runs.removeAll()
        blocks.removeAll()
        spareBlock = nil
        firstBlockLine = 0
        endLine = 0
        runHead = 0
        lineHead = 0
    }

    private mutating func appendEnd(_ end: UInt32) {
        startBlockIfFull()
        blocks[blocks.count - 1].append(end)
        endLine += 1
    }

    /// Makes sure the last block has room for an end: a new one (the spare, if there is one) when it is full or
    /// there is none.
    private mutating func startBlockIfFull() {
        guard blocks.isEmpty || blocks[blocks.count - 1].count == blockEntries else { return }
        var block = spareBlock ?? []
        spareBlock = nil
        block.reserveCapacity(blockEntries)
        blocks.append(block)
    }

    private func end(ofLine line: Int) -> UInt32 {
        let index = line - firstBlockLine
        return blocks[index / blockEntries][index % blockEntries]
    }

    /// Drops acknowledged blocks and runs from the front.
    private mutating func compact() {
        if lineHead == endLine {
            if spareBlock == nil, var block = blocks.first {
                block.removeAll(keepingCapacity: true)
                spareBlock = block
            }
            blocks.removeAll()
            runs.removeAll(keepingCapacity: runs.count <= 4096)
            firstBlockLine = endLine
            runHead = 0
            return
        }
        while lineHead - firstBlockLine >= blockEntries {
            var block = blocks.removeFirst()
            firstBlockLine += blockEntries
            if spareBlock == nil {
                block.removeAll(keepingCapacity: true)
                spareBlock = block
            }
        }
        if runHead >= 1024, runHead * 2 >= runs.count {
            runs.removeFirst(runHead)
            runHead = 0
        }
    }
}
