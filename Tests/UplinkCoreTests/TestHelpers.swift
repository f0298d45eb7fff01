import Testing
import Synchronization
import UplinkCore

/// Deterministic frame contents: `count` bytes derived from `seed`.
func pattern(_ seed: Int, count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: seed &* 131 &+ $0 &* 7 &+ 1) }
}

/// A frame copied out of a ring by `readUnsent`.
struct ReadFrame: Equatable, CustomStringConvertible {
    var sequence: UInt64
    var bytes: [UInt8]
    /// The frame came out in two parts (it wraps around the end of the storage).
    var wrapped = false

    static func == (lhs: ReadFrame, rhs: ReadFrame) -> Bool {
        lhs.sequence == rhs.sequence && lhs.bytes == rhs.bytes
    }

    var description: String { "#\(sequence)(\(bytes.count) bytes)" }
}

/// Reads unsent frames from `ring` (at most `maxBytes` of bodies, at least one frame).
func readUnsent(_ ring: RecordRing, maxBytes: Int = .max) -> [ReadFrame] {
    var frames: [ReadFrame] = []
    let count = ring.readUnsent(maxBytes: maxBytes) { sequence, first, second in
        frames.append(ReadFrame(sequence: sequence, bytes: Array(first) + Array(second), wrapped: !second.isEmpty))
    }
    precondition(count == frames.count, "readUnsent returned \(count) but delivered \(frames.count) frames")
    return frames
}
