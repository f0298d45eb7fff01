import NIOCore
import UplinkCore
import UplinkWire

/// Ring append + drain on one core: a producer appends 200-byte frames, and every 256 frames the consumer copies
/// the unsent ones into a buffer as wire lines (as the uplink does) and acknowledges them.
enum RingBenchmark {
    static func run(frames: Int, frameBytes: Int) -> BenchmarkResult {
        let ring = RecordRing(capacity: 64 << 20)
        let source = ring.registerSource("bench")
        let frame = [UInt8](repeating: UInt8(ascii: "x"), count: frameBytes)
        var drained = 0
        var out = ByteBufferAllocator().buffer(capacity: 96 * 1024)
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        frame.withUnsafeBytes { frame in
            for index in 1...frames {
                ring.append(frame, source: source)
                if index & 255 == 0 || index == frames {
                    out.clear()
                    var last: UInt64 = 0
                    drained += ring.readUnsent(maxBytes: 64 * 1024) { sequence, first, second in
                        WireLineWriter.appendRecordLine(sequence: sequence, frame: first, second, to: &out)
                        last = sequence
                    }
                    ring.acknowledge(through: last)
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        precondition(drained == frames, "drained \(drained) of \(frames)")
        return BenchmarkResult(
            name: "ring append+drain, \(frameBytes)-byte frames",
            lines: [
                "frames: \(frames)",
                "throughput: \(format(Double(frames) / elapsed.seconds / 1e6)) million frames/s (target >= 10)",
                "wall: \(format(elapsed.seconds)) s, cpu: \(format(cpu)) s",
            ]
        )
    }
}
