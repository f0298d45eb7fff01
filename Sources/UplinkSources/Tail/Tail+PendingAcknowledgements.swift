/// The lines of one file incarnation that were handed to the buffer and wait for the collector's acknowledgement:
/// for each, its sequence number and the offset just past it, so that an acknowledgement through any sequence moves
/// the checkpoint to exactly the last line it covers.
///
/// Stored compactly, because a backlog can put a whole ring of lines here (335,000 lines of 200 bytes in a 64 MiB
/// ring): lines with consecutive sequence numbers form a run that keeps its first sequence and base offset once,
/// and each line only its end as 4 bytes past the base. About 4 bytes per line instead of 16 (10 MB for that ring,
/// with the arrays' growth).
struct TailPendingAcknowledgements {
    /// Lines `lineStart..<lineEnd` of `ends`, with sequences `firstSequence`, `firstSequence + 1`, ….
    private struct Run {
        var firstSequence: UInt64
        var baseOffset: UInt64
        var lineStart: Int
        var lineEnd: Int
    }

    private var runs: [Run] = []
    /// Each line's end offset minus its run's base offset.
    private var ends: [UInt32] = []
    /// The oldest run and line not acknowledged yet (the arrays are compacted now and then).
    private var runHead = 0
    private var lineHead = 0

    /// Whether lines wait for acknowledgement.
    var isEmpty: Bool { lineHead == ends.count }

    /// Queues a line: handled once `sequence` is acknowledged; `offset` is just past it. Sequences never decrease
    /// (a line left out, such as an oversize one, repeats the sequence of the line before it).
    mutating func append(sequence: UInt64, offset: UInt64) {
        if runHead < runs.count, let last = runs.last,
            sequence == last.firstSequence + UInt64(last.lineEnd - last.lineStart),
            offset >= last.baseOffset, offset - last.baseOffset <= UInt64(UInt32.max)
        {
            ends.append(UInt32(offset - last.baseOffset))
            runs[runs.count - 1].lineEnd += 1
            return
        }
        runs.append(Run(firstSequence: sequence, baseOffset: offset, lineStart: ends.count, lineEnd: ends.count + 1))
        ends.append(0)
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
        let offset = run.baseOffset + UInt64(ends[line])
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
        ends.removeAll()
        runHead = 0
        lineHead = 0
    }

    private mutating func compact() {
        if lineHead == ends.count {
            let keep = ends.count <= 64 * 1024
            runs.removeAll(keepingCapacity: keep)
            ends.removeAll(keepingCapacity: keep)
            runHead = 0
            lineHead = 0
        } else if lineHead >= 4096, lineHead * 2 >= ends.count {
            ends.removeFirst(lineHead)
            runs.removeFirst(runHead)
            for index in runs.indices {
                runs[index].lineStart -= lineHead
                runs[index].lineEnd -= lineHead
            }
            runHead = 0
            lineHead = 0
        }
    }
}
