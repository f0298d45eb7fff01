import Testing
import UplinkCore
import UplinkTestSupport

/// Random operations checked against an obvious model.
extension RecordRingTests {
    // MARK: Model-based property test

    @Test(.computeBound, arguments: 1...12 as ClosedRange<UInt64>)
    func randomOperationsMatchASimpleModel(seed: UInt64) {
        var random = SplitMix64(seed: seed &* 0x9E37_79B9)
        let capacity = Int.random(in: 64...600, using: &random)
        let policy: OverflowPolicy = seed % 3 == 0 ? .dropNewest : .dropOldest
        let ring = RecordRing(capacity: capacity, policy: policy)
        let sourceNames = ["a", "b", "c"]
        let sources = sourceNames.map { ring.registerSource($0) }
        var model = RingModel(capacity: capacity, policy: policy, sourceNames: sourceNames)

        for step in 0..<3000 {
            let context = "seed \(seed) capacity \(capacity) \(policy) step \(step)"
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<50:
                let size: Int
                switch Int.random(in: 0..<20, using: &random) {
                case 0: size = Int.random(in: (capacity - 10)...(capacity + 10), using: &random)
                case 1...4: size = Int.random(in: 0...(capacity - 8), using: &random)
                default: size = Int.random(in: 0...32, using: &random)
                }
                let source = Int.random(in: 0..<3, using: &random)
                let frame = pattern(step, count: size)
                #expect(ring.append(frame, source: sources[source]) == model.append(frame, source: source), "\(context)")
            case 50..<72:
                let maxBytes = random.next() % 4 == 0 ? Int.max : Int.random(in: 0...200, using: &random)
                #expect(readUnsent(ring, maxBytes: maxBytes) == model.readUnsent(maxBytes: maxBytes), "\(context)")
            case 72..<88:
                let low = Int(model.oldestRetained) - 2
                let high = Int(model.nextToWrite) + 2
                let sequence = UInt64(max(0, Int.random(in: low...high, using: &random)))
                ring.acknowledge(through: sequence)
                model.acknowledge(through: sequence)
            case 88..<94:
                ring.rewindToAcknowledged()
                model.rewind()
            default:
                let low = Int(model.oldestRetained) - 3
                let high = Int(model.nextToWrite) + (random.next() % 8 == 0 ? 50 : 3)
                let sequence = UInt64(max(0, Int.random(in: low...high, using: &random)))
                #expect(ring.resume(collectorHas: sequence) == model.resume(collectorHas: sequence), "\(context)")
            }
            let statistics = Snapshot(ring.statistics())
            #expect(statistics == model.statistics, "\(context)")
            #expect(ring.isEmpty == model.frames.isEmpty, "\(context)")
            #expect(ring.hasUnsentFrames == (model.nextToSend < model.nextToWrite), "\(context)")
            if statistics != model.statistics { return }  // one report per seed is enough
        }
        // Everything still retained reads back byte-identical after a final rewind.
        ring.rewindToAcknowledged()
        model.rewind()
        #expect(readUnsent(ring) == model.readUnsent(maxBytes: .max))
    }

    /// Acknowledgements release whole send passes at once (through the marks the reads leave); more passes than the
    /// ring remembers, acknowledgements between marks, across the wrap of the storage, and after a rewind must all
    /// release exactly what the model does.
    @Test(.computeBound, arguments: 1...3 as ClosedRange<UInt64>)
    func acknowledgementsThroughManySendPassesMatchTheModel(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let capacity = 40_000
        let ring = RecordRing(capacity: capacity)
        let source = ring.registerSource("a")
        var model = RingModel(capacity: capacity, policy: .dropOldest, sourceNames: ["a"])
        for round in 0..<6 {
            for index in 0..<1500 {
                let frame = pattern(round * 1500 + index, count: Int(random.next() % 24))
                #expect(ring.append(frame, source: source) == model.append(frame, source: 0))
                // Mostly one frame per pass, so passes outnumber what the ring remembers.
                if random.next() % 4 != 0 {
                    let maxBytes = Int(random.next() % 40)
                    #expect(readUnsent(ring, maxBytes: maxBytes) == model.readUnsent(maxBytes: maxBytes))
                }
            }
            if round == 3 {
                ring.rewindToAcknowledged()
                model.rewind()
            }
            for _ in 0..<3 {
                let low = model.oldestRetained
                let sequence = low + random.next() % max(1, model.nextToSend - low + 1)
                ring.acknowledge(through: sequence)
                model.acknowledge(through: sequence)
                #expect(Snapshot(ring.statistics()) == model.statistics, "seed \(seed) round \(round)")
            }
        }
        ring.rewindToAcknowledged()
        model.rewind()
        #expect(readUnsent(ring) == model.readUnsent(maxBytes: .max))
    }
}

/// `RingStatistics`, constructible by the model.
private struct Snapshot: Equatable, CustomStringConvertible {
    struct Counts: Equatable {
        var name: String
        var appended: Int
        var droppedOldest: Int
        var droppedNewest: Int
        var rejectedOversize: Int
    }

    var capacity: Int
    var usedBytes: Int
    var retainedFrames: Int
    var unsentFrames: Int
    var acknowledged: UInt64
    var oldestRetained: UInt64
    var nextToSend: UInt64
    var nextToWrite: UInt64
    var sources: [Counts]

    var description: String {
        "used \(usedBytes)/\(capacity), retained \(retainedFrames), unsent \(unsentFrames), acknowledged \(acknowledged), "
            + "oldest \(oldestRetained), next to send \(nextToSend), next to write \(nextToWrite), sources \(sources)"
    }
}

extension Snapshot {
    init(_ statistics: RingStatistics) {
        self.init(
            capacity: statistics.capacity, usedBytes: statistics.usedBytes, retainedFrames: statistics.retainedFrames,
            unsentFrames: statistics.unsentFrames, acknowledged: statistics.acknowledged,
            oldestRetained: statistics.oldestRetained, nextToSend: statistics.nextToSend,
            nextToWrite: statistics.nextToWrite,
            sources: statistics.sources.map {
                Counts(
                    name: $0.name, appended: $0.appended, droppedOldest: $0.droppedOldest,
                    droppedNewest: $0.droppedNewest, rejectedOversize: $0.rejectedOversize)
            })
    }
}

/// The obvious implementation the ring is checked against: an array of retained `(sequence, bytes)`.
private struct RingModel {
    struct Frame {
        var sequence: UInt64
        var source: Int
        var bytes: [UInt8]
    }

    let capacity: Int
    let policy: OverflowPolicy
    var frames: [Frame] = []
    var nextToSend: UInt64 = 1
    var nextToWrite: UInt64 = 1
    var acknowledged: UInt64 = 0
    var counts: [Snapshot.Counts]

    init(capacity: Int, policy: OverflowPolicy, sourceNames: [String]) {
        self.capacity = capacity
        self.policy = policy
        counts = sourceNames.map {
            Snapshot.Counts(name: $0, appended: 0, droppedOldest: 0, droppedNewest: 0, rejectedOversize: 0)
        }
    }

    var used: Int { frames.reduce(0) { $0 + RecordRing.frameHeaderBytes + $1.bytes.count } }
    var oldestRetained: UInt64 { frames.first?.sequence ?? nextToWrite }

    var statistics: Snapshot {
        Snapshot(
            capacity: capacity, usedBytes: used, retainedFrames: frames.count,
            unsentFrames: frames.count(where: { $0.sequence >= nextToSend }), acknowledged: acknowledged,
            oldestRetained: oldestRetained, nextToSend: nextToSend, nextToWrite: nextToWrite, sources: counts)
    }

    mutating func append(_ bytes: [UInt8], source: Int) -> AppendOutcome {
        let needed = RecordRing.frameHeaderBytes + bytes.count
        if needed > capacity {
            counts[source].rejectedOversize += 1
            return .rejectedOversize
        }
        if used + needed > capacity {
            if policy == .dropNewest {
                counts[source].droppedNewest += 1
                return .droppedNewest
            }
            while used + needed > capacity {
                counts[frames.removeFirst().source].droppedOldest += 1
            }
            nextToSend = max(nextToSend, oldestRetained)
        }
        let sequence = nextToWrite
        frames.append(Frame(sequence: sequence, source: source, bytes: bytes))
        nextToWrite += 1
        counts[source].appended += 1
        return .appended(sequence: sequence)
    }

    mutating func readUnsent(maxBytes: Int) -> [ReadFrame] {
        var taken: [ReadFrame] = []
        var bytes = 0
        for frame in frames where frame.sequence >= nextToSend {
            if !taken.isEmpty && bytes + frame.bytes.count > maxBytes { break }
            taken.append(ReadFrame(sequence: frame.sequence, bytes: frame.bytes))
            bytes += frame.bytes.count
        }
        if let last = taken.last { nextToSend = last.sequence + 1 }
        return taken
    }

    mutating func acknowledge(through sequence: UInt64) {
        acknowledged = max(acknowledged, sequence)
        frames.removeAll { $0.sequence <= sequence }
        nextToSend = max(nextToSend, oldestRetained)
    }

    mutating func rewind() {
        nextToSend = oldestRetained
    }

    mutating func resume(collectorHas sequence: UInt64) -> UInt64 {
        acknowledge(through: sequence)
        if sequence >= nextToWrite { nextToWrite = sequence + 1 }
        nextToSend = oldestRetained
        return nextToSend
    }
}
