import Logging
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk side of a persistent `RecordRing` (`buffer.persist`): segment files of checksummed frames, each with its
/// sequence number, and a small `state` file with the stream epoch and the sequence numbers handed out.
///
/// Files in the directory:
/// - `<first sequence, 16 hex digits>.seg`: frames back to back (`SegmentFrame`), sequences increasing. The newest
///   segment is appended to; a segment is closed at `segmentBytes`, deleted once the collector has acknowledged
///   all of it, or (disk budget full, `drop_oldest`) deleted whole with its unacknowledged frames counted as dropped.
///   The newest segment is never deleted: in `always` mode its last frame is the highest sequence ever assigned.
/// - `state`: epoch, next sequence, reserved sequences, whether the last run shut down cleanly (40 bytes, CRC-32C).
///
/// Opening recovers: every segment is scanned, damaged stretches are skipped and counted, a torn or damaged tail is
/// cut off. The agent then keeps the epoch and continues numbering where the last run stopped, so its stream
/// continues at the collector's resume point. After a clean shutdown that is exact. After a crash in `always` mode
/// the disk holds every sequence handed out (placeholders stand for frames not written, see `SegmentFrame`). After a
/// crash in `spill` mode numbering continues above the reservation the `state` file holds (renewed every
/// `reservationBlock` sequences, the only write while healthy), which the collector sees as a gap: records that
/// were only in memory at the crash are lost, and nothing new is mistaken for a duplicate.
///
/// Not thread-safe: the ring calls it with its lock held.
public struct PersistentBuffer: RecordRingDisk {
    /// Where and how the frames are kept.
    public let settings: PersistentBufferSettings
    /// The stream epoch: the persisted one, or the proposed one for a new buffer.
    public private(set) var epoch: UInt64
    /// The sequence the ring assigns next.
    public private(set) var nextSequence: UInt64
    private let logger: Logger
    private var segments: [Segment] = []
    private var activeFD: Int32 = -1
    private var reservedThrough: UInt64 = 0
    private var dirty = false
    private var reader = Reader()
    private var loggedWriteError = false
    /// The counters (`RecordRing.persistentStatistics()` reads them).
    public private(set) var statistics = PersistentBufferStatistics()

    /// Sequences reserved at once in `spill` mode: one 40-byte `state` write per this many records.
    public static let reservationBlock: UInt64 = 1 << 20

    struct Segment: Sendable {
        var firstSequence: UInt64
        var bytes: Int
        /// Highest sequence in the segment, 0 when it has none.
        var lastSequence: UInt64 = 0
        /// Highest sequence of a frame with a body (not a placeholder), 0 when none.
        var lastDataSequence: UInt64 = 0
    }

    /// The segment being read for sending and where.
    private struct Reader: Sendable {
        var segment: UInt64 = 0
        var content: [UInt8] = []
        var offset = 0
        var previous: UInt64 = 0
        var nextSequence: UInt64 = .max
    }

    /// Opens (creating it if needed) and recovers the buffer in `settings.directory`.
    ///
    /// - Parameter proposedEpoch: the epoch to use when the directory holds no valid `state` file.
    public static func open(
        _ settings: PersistentBufferSettings, proposedEpoch: UInt64, logger: Logger
    ) throws(PersistentBufferError) -> PersistentBuffer {
        var buffer = PersistentBuffer(settings: settings, epoch: proposedEpoch, logger: logger)
        try buffer.recover()
        return buffer
    }

    private init(settings: PersistentBufferSettings, epoch: UInt64, logger: Logger) {
        self.settings = settings
        self.epoch = epoch
        self.nextSequence = 1
        var logger = logger
        logger[metadataKey: "buffer_dir"] = "\(settings.directory)"
        self.logger = logger
    }

    // MARK: Recovery

    private mutating func recover() throws(PersistentBufferError) {
        try PersistentFiles.makeDirectories(settings.directory)
        let names = try PersistentFiles.list(settings.directory)
        var firsts: [UInt64] = []
        for name in names where name.hasSuffix(".seg") && name.utf8.count == 20 {
            if let first = UInt64(name.prefix(16), radix: 16) { firsts.append(first) }
        }
        var previous: UInt64 = 0
        for first in firsts.sorted() {
            let path = segmentPath(first)
            let fd = try PersistentFiles.openForReading(path)
            let size = PersistentFiles.size(fd)
            var content = [UInt8](repeating: 0, count: size)
            let read = content.withUnsafeMutableBytes { PersistentFiles.read(fd, into: $0, count: size, at: 0) }
            close(fd)
            let scan = content.prefix(read).withUnsafeBytes { SegmentFrame.scan($0, after: max(previous, first &- 1)) }
            var segment = Segment(firstSequence: first, bytes: scan.validEnd)
            for frame in scan.frames {
                segment.lastSequence = frame.sequence
                if !frame.isPlaceholder {
                    segment.lastDataSequence = frame.sequence
                    statistics.restoredFrames += 1
                    statistics.restoredBytes += frame.length
                }
            }
            statistics.corruptRegions += scan.corruptRegions
            if scan.validEnd < size {
                if scan.tornTail { statistics.tornTails += 1 } else { statistics.corruptRegions += 1 }
                logger.warning(
                    "persistent buffer: \(scan.tornTail ? "torn" : "damaged") tail cut off",
                    metadata: ["segment": "\(path)", "valid_bytes": "\(scan.validEnd)", "file_bytes": "\(size)"])
                guard truncate(path, off_t(scan.validEnd)) == 0 else {
                    throw PersistentBufferError(FileError(operation: "truncate", path: path, errno: errno))
                }
            }
            if scan.corruptRegions > 0 {
                logger.warning(
                    "persistent buffer: damaged frames skipped",
                    metadata: ["segment": "\(path)", "regions": "\(scan.corruptRegions)"])
            }
            previous = max(previous, segment.lastSequence)
            segments.append(segment)
        }
        // Empty segments other than the newest hold nothing.
        while segments.count > 1, let index = segments.dropLast().firstIndex(where: { $0.lastSequence == 0 }) {
            unlink(segmentPath(segments[index].firstSequence))
            segments.remove(at: index)
        }

        let diskNext = segments.last.map { max($0.lastSequence + 1, $0.firstSequence, previous + 1) } ?? 1
        if let state = readState() {
            epoch = state.epoch
            statistics.resumedEpoch = true
            statistics.previousShutdownClean = state.clean
            nextSequence = max(diskNext, state.next, state.clean ? 0 : state.reserved)
            if !state.clean {
                logger.warning(
                    "persistent buffer: the last run did not shut down cleanly",
                    metadata: [
                        "mode": "\(settings.mode.rawValue)", "next_sequence": "\(nextSequence)",
                        "note": "\(settings.mode == .spill ? "records only in memory then are lost; the collector sees a gap" : "every record written before the crash is kept")",
                    ])
            }
        } else {
            if !segments.isEmpty {
                logger.warning("persistent buffer: no valid state file; its records are sent under a new epoch")
            }
            nextSequence = diskNext
        }
        statistics.epoch = epoch
        statistics.openedAtSequence = nextSequence
        reservedThrough = nextSequence
        if settings.mode == .spill { reservedThrough = nextSequence + Self.reservationBlock }
        try writeState(clean: false, next: nextSequence)
        try openActive()
        statistics.diskBytes = segments.reduce(0) { $0 + $1.bytes }
        logger.info(
            "persistent buffer open",
            metadata: [
                "epoch": "\(epoch)", "next_sequence": "\(nextSequence)", "frames": "\(statistics.restoredFrames)",
                "bytes": "\(statistics.diskBytes)", "mode": "\(settings.mode.rawValue)",
            ])
    }

    /// Continues the newest segment if it has room, or starts one named after the next sequence.
    private mutating func openActive() throws(PersistentBufferError) {
        if let last = segments.last, last.bytes < settings.segmentBytes {
            activeFD = try PersistentFiles.openForAppending(segmentPath(last.firstSequence))
            return
        }
        try startSegment(first: nextSequence)
    }

    private mutating func startSegment(first: UInt64) throws(PersistentBufferError) {
        if activeFD >= 0 {
            if settings.mode == .always { PersistentFiles.sync(activeFD) }
            close(activeFD)
            activeFD = -1
        }
        activeFD = try PersistentFiles.openForAppending(segmentPath(first))
        segments.append(Segment(firstSequence: first, bytes: 0))
        PersistentFiles.syncDirectory(settings.directory)
    }

    // MARK: Writing

    /// What became of a frame handed to `append`.
    public typealias WriteOutcome = RecordRingDiskWrite

    /// Writes one frame (the body in one or two parts). Frames must come in increasing sequence order.
    ///
    /// - Parameters:
    ///   - placeholder: write only the header, recording that `sequence` was used.
    ///   - acknowledged: the collector's acknowledged sequence, to count what a full budget drops.
    public mutating func append(
        sequence: UInt64, sourceWord: UInt32, placeholder: Bool,
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, acknowledged: UInt64
    ) -> WriteOutcome {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let (body1, body2) = placeholder ? (empty, empty) : (first, second)
        let word = placeholder ? sourceWord | SegmentFrame.placeholderFlag : sourceWord
        let size = SegmentFrame.headerBytes + body1.count + body2.count
        guard size <= settings.maxBytes / 2 else {
            statistics.framesRefused += 1
            return .refused
        }
        do {
            if let active = segments.last, active.bytes > 0, active.bytes + size > settings.segmentBytes {
                try startSegment(first: sequence)
            }
            guard makeRoom(for: size, acknowledged: acknowledged) else {
                statistics.framesRefused += 1
                return .refused
            }
        } catch {
            return failed(error.file.errno, error.description)
        }
        // No allocation per frame: the header and the vectors live on the stack.
        let fd = activeFD
        let error = withUnsafeTemporaryAllocation(byteCount: SegmentFrame.headerBytes, alignment: 8) { header in
            SegmentFrame.writeHeader(into: header, sequence: sequence, sourceWord: word, body1, body2)
            return withUnsafeTemporaryAllocation(of: iovec.self, capacity: 3) { vectors -> FileError? in
                vectors[0] = iovec(iov_base: header.baseAddress, iov_len: header.count)
                vectors[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body1.baseAddress), iov_len: body1.count)
                vectors[2] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body2.baseAddress), iov_len: body2.count)
                do throws(FileError) {
                    try SystemFile.writeAll(fd, vectors, total: size, path: activeSegmentPath)
                    return nil
                } catch {
                    return error
                }
            }
        }
        if let error { return failed(error.errno, error.description) }
        segments[segments.count - 1].bytes += size
        segments[segments.count - 1].lastSequence = sequence
        if !placeholder { segments[segments.count - 1].lastDataSequence = sequence }
        dirty = true
        statistics.framesWritten += 1
        statistics.bytesWritten += size
        statistics.diskBytes += size
        return .written
    }

    /// The newest segment's file, which `append` writes to.
    private var activeSegmentPath: String {
        segments.last.map { segmentPath($0.firstSequence) } ?? settings.directory
    }

    private mutating func failed(_ code: Int32, _ description: String) -> WriteOutcome {
        statistics.writeErrors += 1
        if !loggedWriteError {
            loggedWriteError = true
            logger.error(
                "persistent buffer: cannot write, records stay in memory only: \(description)",
                metadata: ["errno": "\(FileError.text(errno: code))"])
        }
        return .failed
    }

    /// Deletes the oldest segments (`drop_oldest`) until `size` more bytes fit the budget; false when they cannot.
    private mutating func makeRoom(for size: Int, acknowledged: UInt64) -> Bool {
        while statistics.diskBytes + size > settings.maxBytes {
            guard settings.overflow == .dropOldest, segments.count > 1 else { return false }
            let oldest = segments.removeFirst()
            let dropped = countFrames(of: oldest, above: acknowledged)
            unlink(segmentPath(oldest.firstSequence))
            statistics.diskBytes -= oldest.bytes
            statistics.framesDropped += dropped
            if reader.segment == oldest.firstSequence { reader = Reader() }
            logger.warning(
                "persistent buffer full: oldest records dropped",
                metadata: ["records": "\(dropped)", "max_bytes": "\(settings.maxBytes)"])
        }
        return true
    }

    /// Frames with a body in `segment` above `acknowledged`.
    private func countFrames(of segment: Segment, above acknowledged: UInt64) -> Int {
        guard segment.lastDataSequence > acknowledged else { return 0 }
        guard let content = PersistentFiles.readWhole(segmentPath(segment.firstSequence), limit: segment.bytes) else { return 0 }
        let scan = content.withUnsafeBytes { SegmentFrame.scan($0, after: 0) }
        return scan.frames.filter { !$0.isPlaceholder && $0.sequence > acknowledged }.count
    }

    /// Notes that the ring handed out sequences below `next`; in `spill` mode renews the reservation when needed.
    public mutating func noteAssigned(next: UInt64) {
        nextSequence = next
        guard settings.mode == .spill, next > reservedThrough else { return }
        reservedThrough = next + Self.reservationBlock
        do {
            try writeState(clean: false, next: next)
        } catch {
            _ = failed(error.file.errno, error.description)
        }
    }

    // MARK: Reading

    /// Frames with a body from `sequence` up to (not including) `limit`, oldest first, while their bodies add up to
    /// at most `maxBytes` (at least one when `mayExceed`). Returns the sequence to continue from: that of the first frame not
    /// delivered, or `limit` when the disk holds nothing more below it.
    public mutating func read(
        from sequence: UInt64, below limit: UInt64, maxBytes: Int, mayExceed: Bool,
        _ body: (_ sequence: UInt64, _ bytes: UnsafeRawBufferPointer) -> Void
    ) -> (next: UInt64, frames: Int, bytes: Int) {
        var frames = 0
        var bytes = 0
        var wanted = sequence
        while wanted < limit {
            guard position(at: wanted) else { return (limit, frames, bytes) }
            var exhausted = false
            reader.content.withUnsafeBytes { content in
                while true {
                    guard let found = SegmentFrame.parse(content, at: reader.offset, after: reader.previous)
                        ?? SegmentFrame.resynchronize(content, after: reader.offset, previous: reader.previous)
                    else {
                        reader.offset = content.count
                        exhausted = true
                        return
                    }
                    if found.sequence >= limit {
                        wanted = limit
                        return
                    }
                    if found.sequence >= wanted && !found.isPlaceholder {
                        if (frames > 0 || !mayExceed) && bytes + found.length > maxBytes {
                            reader.offset = found.offset
                            wanted = found.sequence
                            return
                        }
                        body(found.sequence, UnsafeRawBufferPointer(
                            rebasing: content[(found.offset + SegmentFrame.headerBytes)..<found.end]))
                        frames += 1
                        bytes += found.length
                    }
                    reader.offset = found.end
                    reader.previous = found.sequence
                    wanted = max(wanted, found.sequence + 1)
                }
            }
            reader.nextSequence = wanted
            if !exhausted { break }
            guard let next = segments.first(where: { $0.firstSequence > reader.segment }) else {
                return (limit, frames, bytes)
            }
            wanted = max(wanted, next.firstSequence)
        }
        return (min(wanted, limit), frames, bytes)
    }

    /// Loads the segment holding `sequence` (or the first after it) and places the reader before that frame.
    /// False when no segment holds it or anything after it.
    private mutating func position(at sequence: UInt64) -> Bool {
        guard let index = segments.lastIndex(where: { $0.firstSequence <= sequence })
            ?? (segments.isEmpty ? nil : segments.startIndex)
        else { return false }
        var segment = segments[index]
        if segment.lastSequence < sequence {
            guard index + 1 < segments.count else { return false }
            segment = segments[index + 1]
        }
        if reader.segment == segment.firstSequence && !reader.content.isEmpty && reader.nextSequence == sequence {
            if reader.content.count < segment.bytes { reload(segment) }
            return true
        }
        reader = Reader()
        reader.segment = segment.firstSequence
        reload(segment)
        reader.offset = 0
        reader.previous = segment.firstSequence &- 1
        reader.nextSequence = sequence
        return true
    }

    private mutating func reload(_ segment: Segment) {
        reader.content = PersistentFiles.readWhole(segmentPath(segment.firstSequence), limit: segment.bytes) ?? []
    }

    /// Whether the disk holds a frame with a body above `acknowledged`.
    public func hasData(above acknowledged: UInt64) -> Bool {
        segments.contains { $0.lastDataSequence > acknowledged }
    }

    // MARK: Releasing, flushing, closing

    /// Deletes the segments, all but the newest, whose frames the collector has all acknowledged.
    public mutating func release(through acknowledged: UInt64) {
        while segments.count > 1, segments[0].lastSequence <= acknowledged {
            let segment = segments.removeFirst()
            unlink(segmentPath(segment.firstSequence))
            statistics.diskBytes -= segment.bytes
            if reader.segment == segment.firstSequence { reader = Reader() }
        }
    }

    /// When something was written since the last call: the `fsync` of the newest segment (through a duplicate of its
    /// descriptor, closed afterwards), for the ring to run outside its lock.
    public mutating func takeSync() -> (@Sendable () -> Void)? {
        guard dirty, activeFD >= 0 else { return nil }
        dirty = false
        let copy = dup(activeFD)
        guard copy >= 0 else { return nil }
        return {
            PersistentFiles.sync(copy)
            PersistentFiles.closeDescriptor(copy)
        }
    }

    /// Flushes and closes the newest segment and records a clean shutdown with the next sequence to assign.
    public mutating func closeCleanly(next: UInt64) {
        if activeFD >= 0 {
            PersistentFiles.sync(activeFD)
            close(activeFD)
            activeFD = -1
        }
        nextSequence = next
        do {
            try writeState(clean: true, next: next)
        } catch {
            logger.error("persistent buffer: cannot record the clean shutdown: \(error)")
        }
        logger.info(
            "persistent buffer closed",
            metadata: ["next_sequence": "\(next)", "bytes": "\(statistics.diskBytes)"])
    }

    /// Bytes on disk now, segment files together.
    public var diskBytes: Int { statistics.diskBytes }

    // MARK: Files

    private func segmentPath(_ first: UInt64) -> String {
        let hex = String(first, radix: 16)
        return settings.directory + "/" + String(repeating: "0", count: max(0, 16 - hex.count)) + hex + ".seg"
    }

    private var statePath: String { settings.directory + "/state" }

    private static let stateMagic: UInt32 = 0x5453_5055  // "UPST"

    private struct State {
        var epoch: UInt64
        var next: UInt64
        var reserved: UInt64
        var clean: Bool
    }

    private func readState() -> State? {
        guard let bytes = PersistentFiles.readWhole(statePath, limit: 64), bytes.count == 40 else { return nil }
        return bytes.withUnsafeBytes { raw -> State? in
            func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
            func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
            guard u32(0) == Self.stateMagic, u32(4) == 1,
                CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<36])) == u32(36), u64(8) >= 1
            else { return nil }
            return State(epoch: u64(8), next: u64(16), reserved: u64(24), clean: u32(32) == 1)
        }
    }

    private func writeState(clean: Bool, next: UInt64) throws(PersistentBufferError) {
        var bytes = [UInt8](repeating: 0, count: 40)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: Self.stateMagic.littleEndian, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(1).littleEndian, toByteOffset: 4, as: UInt32.self)
            raw.storeBytes(of: epoch.littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: next.littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: max(reservedThrough, next).littleEndian, toByteOffset: 24, as: UInt64.self)
            raw.storeBytes(of: UInt32(clean ? 1 : 0).littleEndian, toByteOffset: 32, as: UInt32.self)
            let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(raw)[0..<36]))
            raw.storeBytes(of: crc.littleEndian, toByteOffset: 36, as: UInt32.self)
        }
        try PersistentFiles.writeAtomically(statePath, bytes)
    }
}
