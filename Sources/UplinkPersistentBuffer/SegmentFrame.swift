/// The layout of one frame in a segment file of the persistent buffer, and the scanner that finds valid frames.
///
/// ```
/// offset  size  field
///      0     4  magic "UPLK" (0x4B4C5055, little-endian)
///      4     4  body length in bytes
///      8     8  sequence number
///     16     4  source word: the ring's source id; bit 30 set for a placeholder (no body is sent, see below)
///     20     4  CRC-32C of bytes 4..<20 and of the body
///     24     …  body: the frame as the ring stores it
/// ```
///
/// A placeholder records only that a sequence number was used (`always` mode writes one for frames of sources that
/// keep their own checkpoints, such as log tailers), so the highest sequence ever assigned survives a crash.
/// Sequence numbers increase strictly within a segment; a frame whose checksum or order is wrong is skipped by
/// searching for the next magic that starts a valid frame.
enum SegmentFrame {
    static let magic: UInt32 = 0x4B4C_5055
    static let headerBytes = 24
    static let placeholderFlag: UInt32 = 0x4000_0000

    /// A valid frame found in a segment's bytes.
    struct Found {
        var offset: Int
        var length: Int
        var sequence: UInt64
        var sourceWord: UInt32
        var end: Int { offset + SegmentFrame.headerBytes + length }
        var isPlaceholder: Bool { sourceWord & SegmentFrame.placeholderFlag != 0 }
    }

    /// Writes the header of a frame with `body` (given in one or two parts) into `bytes` (`headerBytes` long).
    static func writeHeader(
        into bytes: UnsafeMutableRawBufferPointer, sequence: UInt64, sourceWord: UInt32,
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer
    ) {
        bytes.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        bytes.storeBytes(of: UInt32(first.count + second.count).littleEndian, toByteOffset: 4, as: UInt32.self)
        bytes.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt64.self)
        bytes.storeBytes(of: sourceWord.littleEndian, toByteOffset: 16, as: UInt32.self)
        var crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[4..<20]))
        crc = CRC32C.checksum(first, continuing: crc)
        crc = CRC32C.checksum(second, continuing: crc)
        bytes.storeBytes(of: crc.littleEndian, toByteOffset: 20, as: UInt32.self)
    }

    /// The frame at `offset` if it is whole, its checksum matches and its sequence is above `previous`.
    static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, after previous: UInt64) -> Found? {
        guard bytes.count - offset >= headerBytes else { return nil }
        func word(_ at: Int) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt32.self)) }
        guard word(0) == magic else { return nil }
        let length = Int(word(4))
        guard length <= bytes.count - offset - headerBytes else { return nil }
        let sequence = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        guard sequence > previous else { return nil }
        var crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 20)]))
        let bodyStart = offset + headerBytes
        crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<(bodyStart + length)]), continuing: crc)
        guard crc == word(20) else { return nil }
        return Found(offset: offset, length: length, sequence: sequence, sourceWord: word(16))
    }

    /// The first valid frame starting after `offset`, searching byte by byte for its magic.
    static func resynchronize(_ bytes: UnsafeRawBufferPointer, after offset: Int, previous: UInt64) -> Found? {
        var candidate = offset + 1
        while bytes.count - candidate >= headerBytes {
            if bytes[candidate] == 0x55, let found = parse(bytes, at: candidate, after: previous) { return found }
            candidate += 1
        }
        return nil
    }

    /// What a scan of a whole segment found.
    struct Scan {
        var frames: [Found] = []
        /// Stretches of bytes that were not valid frames but were followed by one (each a lost frame or more).
        var corruptRegions = 0
        /// Where the valid content ends; bytes after it are a torn or corrupted tail.
        var validEnd = 0
        /// Whether the bytes after `validEnd` look like a frame cut short by a crash (rather than damage).
        var tornTail = false
    }

    /// Scans a segment's bytes: every valid frame in order, the damaged stretches skipped, the invalid tail found.
    static func scan(_ bytes: UnsafeRawBufferPointer, after previous: UInt64) -> Scan {
        var scan = Scan()
        var offset = 0
        var last = previous
        while offset < bytes.count {
            if let found = parse(bytes, at: offset, after: last) {
                scan.frames.append(found)
                offset = found.end
                last = found.sequence
                continue
            }
            if let found = resynchronize(bytes, after: offset, previous: last) {
                scan.corruptRegions += 1
                offset = found.offset
                continue
            }
            scan.tornTail = looksTorn(bytes, at: offset)
            break
        }
        scan.validEnd = offset
        return scan
    }

    /// A header cut short, or a whole header whose body runs past the end: what a crash mid-write leaves.
    private static func looksTorn(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        let remaining = bytes.count - offset
        if remaining < headerBytes { return true }
        let first = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        return first == magic && length > remaining - headerBytes
    }
}
