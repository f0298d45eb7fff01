#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import UplinkCore
import UplinkFiles

/// The first bytes of a file, hashed: with device and inode it tells a file from a later one that reuses the
/// inode, and shows when a file was truncated and rewritten.
struct TailFingerprint: Sendable, Equatable {
    /// Bytes covered at most.
    static let maximumLength = 256

    /// How many of the first bytes the hash covers (fewer than `maximumLength` while the file is shorter).
    var length: Int
    /// FNV-1a (64 bit) of those bytes.
    var hash: UInt64

    static let empty = TailFingerprint(length: 0, hash: fnv1a(UnsafeRawBufferPointer(start: nil, count: 0)))

    static func fnv1a(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Compares the file's first bytes with `self`. `scratch` must hold `maximumLength` bytes; afterwards it holds
    /// the bytes the returned fingerprint covers. `knownBytes`: the `length` bytes `self` was made from, when the
    /// caller kept them: equal bytes have equal hashes, so a match answers without hashing (different bytes are
    /// still hashed, and decide as without them).
    /// - Returns: nil when they differ (or the file is now shorter than `length`); otherwise the fingerprint
    ///   over as many bytes as the file has now, up to `maximumLength` (an extension of `self`).
    func verified(descriptor: Int32, scratch: UnsafeMutableRawBufferPointer, knownBytes: [UInt8]? = nil) -> TailFingerprint? {
        let count = SourceFiles.readCount(descriptor, into: scratch, at: 0)
        guard count >= length else { return nil }
        let covered = UnsafeRawBufferPointer(rebasing: scratch[0..<length])
        let known = knownBytes.map { kept in
            kept.count == length && kept.withUnsafeBytes { length == 0 || memcmp($0.baseAddress!, covered.baseAddress!, length) == 0 }
        }
        guard known == true || Self.fnv1a(covered) == hash else { return nil }
        if count == length { return self }
        return TailFingerprint(length: count, hash: Self.fnv1a(UnsafeRawBufferPointer(rebasing: scratch[0..<count])))
    }

    /// The fingerprint of the file's current first bytes (empty when it cannot be read).
    static func current(descriptor: Int32, scratch: UnsafeMutableRawBufferPointer) -> TailFingerprint {
        let count = max(0, SourceFiles.readCount(descriptor, into: scratch, at: 0))
        return TailFingerprint(length: count, hash: fnv1a(UnsafeRawBufferPointer(rebasing: scratch[0..<count])))
    }
}

/// Splits bytes read from a file into lines at `\n`, removing one `\r` before it, keeping an unfinished last
/// line (its first `maxLineBytes` bytes, and its full length) across reads.
struct TailLineSplitter {
    let maxLineBytes: Int
    /// The unfinished line's first bytes, at most `maxLineBytes`.
    private(set) var carry: [UInt8] = []
    /// The unfinished line's length so far (may exceed `carry.count`).
    private(set) var carryLength = 0
    private var carryLastByte: UInt8 = 0

    init(maxLineBytes: Int) {
        self.maxLineBytes = max(1, maxLineBytes)
    }

    var hasCarry: Bool { carryLength > 0 }

    /// Splits `chunk`, which starts at file offset `base`. For every finished line calls `line` with its message
    /// (cut to `maxLineBytes`), the offset just past its `\n`, and its length before cutting (without `\r\n`).
    @inline(__always)
    mutating func split(
        _ chunk: UnsafeRawBufferPointer, base: UInt64,
        _ line: (_ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int) -> Void
    ) {
        var position = 0
        if carryLength > 0 {
            // The chunk's first line ends the unfinished one (or the whole chunk continues it).
            guard let newline = NewlineScan.first(in: chunk) else {
                appendCarry(chunk)
                return
            }
            appendCarry(UnsafeRawBufferPointer(rebasing: chunk[0..<newline]))
            finishCarry(endOffset: base + UInt64(newline + 1), line)
            position = newline + 1
        }
        let unfinished = NewlineScan.forEachLine(in: chunk, from: position) { text, next in
            line(UnsafeRawBufferPointer(rebasing: chunk[text.lowerBound..<min(text.upperBound, text.lowerBound + maxLineBytes)]),
                base + UInt64(next), text.count)
        }
        appendCarry(UnsafeRawBufferPointer(rebasing: chunk[unfinished...]))
    }

    /// Hands out the unfinished line as it is (a partial line whose writer paused), ending at `endOffset`.
    mutating func flushCarry(
        endOffset: UInt64, _ line: (_ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int) -> Void
    ) {
        guard carryLength > 0 else { return }
        finishCarry(endOffset: endOffset, line)
    }

    /// Forgets the unfinished line.
    mutating func reset() {
        carry.removeAll(keepingCapacity: false)
        carryLength = 0
        carryLastByte = 0
    }

    private mutating func appendCarry(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        carryLastByte = bytes[bytes.count - 1]
        carryLength += bytes.count
        let room = maxLineBytes - carry.count
        if room > 0 { carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<min(room, bytes.count)])) }
    }

    private mutating func finishCarry(
        endOffset: UInt64, _ line: (_ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int) -> Void
    ) {
        var length = carryLength
        if length > 0, carryLastByte == UInt8(ascii: "\r") { length -= 1 }
        carry.withUnsafeBytes { bytes in
            line(UnsafeRawBufferPointer(rebasing: bytes[0..<min(length, bytes.count)]), endOffset, length)
        }
        carry.removeAll(keepingCapacity: carry.count <= 4096)
        carryLength = 0
        carryLastByte = 0
    }
}

/// One file incarnation the tailer follows: an open descriptor, where reading stands, and what the collector has
/// acknowledged. Owned by the engine's task only.
final class TailedFile {
    /// -1 while parked or closed.
    private(set) var descriptor: Int32
    let inode: FileIdentity
    /// The path the file was last seen under (the `path` field of its records).
    var path: String {
        didSet { fields = [Tag("path", path)] }
    }
    /// The fields of its records.
    private(set) var fields: [Tag]
    /// The path it was first followed under: incarnations that follow one another at a path form a chain that
    /// is read in order.
    var chain: String
    var fingerprint: TailFingerprint
    /// The first bytes of the file behind a fingerprint that `verifiedFingerprint(scratch:)` returned: while that is
    /// still `fingerprint`, the next check compares these bytes instead of hashing the file's again (a check comes
    /// with every read, which at a few lines a second is every line; docs/architecture.md).
    private var verifiedHead: (fingerprint: TailFingerprint, bytes: [UInt8])?
    /// The incarnation's origin id (new after a truncation).
    var originID: UInt64
    /// Next byte to read.
    var readOffset: UInt64
    /// Just past the last line handed to the sink (or skipped as oversize).
    var emittedOffset: UInt64
    /// Just past the last line the collector has acknowledged: the checkpoint.
    var acknowledgedOffset: UInt64
    /// Emitted lines not yet acknowledged: their sequence numbers and end offsets.
    var pending = TailPendingAcknowledgements()
    var splitter: TailLineSplitter
    var multiline: TailMultiline?
    /// The last read found no more data.
    var atEnd = false
    /// `read` compared the first bytes with the fingerprint in this turn of the engine, after reading data: the look
    /// for a truncation at the end of the turn needs only the size. (Any change after it wakes another turn.)
    var fingerprintVerifiedThisTurn = false
    /// When data last arrived (or the file was opened).
    var lastGrowth: ContinuousClock.Instant
    /// Set once the file is no longer at its path (renamed, deleted or replaced).
    var detachedAt: ContinuousClock.Instant?
    /// Discoveries run before the detachment; a later discovery shows whether it was renamed to a followed path.
    var detachedAtDiscovery = 0
    var isClosed = false
    /// Read to its end and quiet at its path: the descriptor is closed (10,000 matched files are not 10,000 open
    /// descriptors) and the file is opened again when it changes. Everything else is kept.
    private(set) var isParked = false
    /// When the path is a symbolic link: never parked (its target's directory is not watched).
    var neverPark = false
    /// What the file is to a copytruncate copy check (see `TailCopyState`).
    var copyState: TailCopyState = .none
    /// The checkpoint line last written for it, and what it was made of.
    var encodedCheckpoint: (checkpoint: TailCheckpoint, line: [UInt8])?
    var warnedOversize = false
    var warnedReadError = false
    /// Its last read failed: it stays at its end until a read succeeds (its size says nothing then).
    var readFailing = false
    /// The inotify watch for its modifications, if any.
    var modifyWatch: Int32?

    init(
        descriptor: Int32, inode: FileIdentity, path: String, fingerprint: TailFingerprint, originID: UInt64,
        offset: UInt64, maxLineBytes: Int, multiline: TailMultiline?, now: ContinuousClock.Instant
    ) {
        self.descriptor = descriptor
        self.inode = inode
        self.path = path
        self.fields = [Tag("path", path)]
        self.chain = path
        self.fingerprint = fingerprint
        self.originID = originID
        self.readOffset = offset
        self.emittedOffset = offset
        self.acknowledgedOffset = offset
        self.splitter = TailLineSplitter(maxLineBytes: maxLineBytes)
        self.multiline = multiline
        self.lastGrowth = now
    }

    var isDetached: Bool { detachedAt != nil }

    /// `fingerprint.verified(descriptor:scratch:)` for this file's descriptor, the same answer, given the bytes kept
    /// from the last check while they are still the fingerprint's.
    func verifiedFingerprint(scratch: UnsafeMutableRawBufferPointer) -> TailFingerprint? {
        let known = verifiedHead.flatMap { $0.fingerprint == fingerprint ? $0.bytes : nil }
        guard let verified = fingerprint.verified(descriptor: descriptor, scratch: scratch, knownBytes: known) else {
            return nil
        }
        if verifiedHead?.fingerprint != verified {
            verifiedHead = (verified, Array(UnsafeRawBufferPointer(rebasing: scratch[0..<verified.length])))
        }
        return verified
    }

    /// Whether lines were emitted that the collector has not acknowledged yet.
    var hasUnacknowledged: Bool { !pending.isEmpty }

    /// Records that the lines up to `offset` are handled once `sequence` is acknowledged.
    @inline(__always)
    func enqueue(sequence: UInt64, offset: UInt64) {
        emittedOffset = offset
        pending.append(sequence: sequence, offset: offset)
    }

    /// `enqueue(sequence:offset:)` for lines with consecutive sequences from `firstSequence`, ending at `offsets`.
    func enqueue(firstSequence: UInt64, offsets: some RandomAccessCollection<UInt64>) {
        guard let last = offsets.last else { return }
        emittedOffset = last
        pending.append(firstSequence: firstSequence, offsets: offsets)
    }

    /// Advances `acknowledgedOffset` over the lines with sequence numbers up to `acknowledged`.
    /// Returns whether it moved.
    func acknowledge(through acknowledged: UInt64) -> Bool {
        guard let offset = pending.acknowledge(through: acknowledged) else { return false }
        let before = acknowledgedOffset
        acknowledgedOffset = offset
        return acknowledgedOffset != before
    }

    /// Starts a new incarnation at offset 0 in the same file (it was truncated): new origin, nothing pending.
    func restart(originID: UInt64, fingerprint: TailFingerprint, now: ContinuousClock.Instant) {
        self.originID = originID
        self.fingerprint = fingerprint
        readOffset = 0
        emittedOffset = 0
        acknowledgedOffset = 0
        pending.removeAll()
        splitter.reset()
        multiline?.reset()
        atEnd = false
        lastGrowth = now
    }

    /// Whether it has a descriptor to read.
    var isOpen: Bool { !isClosed && !isParked }

    /// Closes it for good.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if descriptor >= 0 { SourceFiles.closeDescriptor(descriptor) }
        descriptor = -1
        isParked = false
    }

    /// Modification time when it was parked: a parked file whose size or time changed is opened again.
    private(set) var parkedModified: Int64 = 0

    /// Closes the descriptor but keeps the state (see `isParked`).
    func park(modified: Int64) {
        guard isOpen else { return }
        SourceFiles.closeDescriptor(descriptor)
        descriptor = -1
        isParked = true
        parkedModified = modified
    }

    /// Whether a parked file with this status may hold something new.
    func changedSinceParked(_ status: FileStatus) -> Bool {
        status.size != readOffset || status.modified != parkedModified
    }

    /// Continues a parked file with a descriptor of the same file, opened again.
    func unpark(descriptor: Int32, now: ContinuousClock.Instant) {
        precondition(isParked && !isClosed)
        self.descriptor = descriptor
        isParked = false
        atEnd = false
    }
}

/// Whether a file may be a copy of another one being followed (logrotate's `copytruncate` copies the file and then
/// truncates it; when `paths` matches the copy's name too, the copy must continue the incarnation already read, not
/// be read again from 0).
enum TailCopyState {
    /// An ordinary file.
    case none
    /// A new file that may be a copy: not read until its first bytes show (`since`: when it first had some).
    case undecided(since: ContinuousClock.Instant?)
    /// A copy of `source`'s incarnation `origin` (same first 256 bytes, another inode): not read on its own while
    /// that incarnation is followed; when the source is truncated, its unread end is read from here as the source's
    /// incarnation, which then goes on in this file.
    case copy(of: TailedFile, origin: UInt64)
}

/// A random origin id in 1...2^63-1.
func newTailOriginID() -> UInt64 {
    UInt64.random(in: 1...UInt64(Int64.max))
}
