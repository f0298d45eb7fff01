import UplinkCore

/// Runs a target on seeded mutations of its seed inputs, without libFuzzer: the bounded runs of the test suite,
/// and `uplink-fuzz TARGET RUNS SEED` in a normal build. Deterministic for a given seed.
public struct FuzzDriver {
    public let target: FuzzTarget
    private var random: SplitMix64
    private var corpus: [[UInt8]]

    public init(target: FuzzTarget, seed: UInt64) {
        self.target = target
        self.random = SplitMix64(seed: seed)
        self.corpus = target.seeds
    }

    /// Runs `count` inputs (the seeds first, then mutations); returns how many ran.
    @discardableResult
    public mutating func run(count: Int, maximumLength: Int = 4096) -> Int {
        for index in 0..<count {
            let input = index < corpus.count ? corpus[index] : mutate(maximumLength: maximumLength)
            target.run(input)
            // Keep some mutants as parents, so mutations compound (a corpus without coverage feedback).
            if index >= corpus.count && random.next() % 16 == 0 && corpus.count < 512 { corpus.append(input) }
        }
        return count
    }

    /// The next input: a seed or kept mutant, changed one to four times.
    public mutating func mutate(maximumLength: Int) -> [UInt8] {
        var input = corpus[Int(random.next() % UInt64(corpus.count))]
        for _ in 0...(random.next() % 4) {
            switch random.next() % 9 {
            case 0 where !input.isEmpty:  // flip a bit
                let index = Int(random.next() % UInt64(input.count))
                input[index] ^= 1 << UInt8(random.next() % 8)
            case 1 where !input.isEmpty:  // replace a byte with an interesting one
                let index = Int(random.next() % UInt64(input.count))
                input[index] = Self.interestingBytes[Int(random.next() % UInt64(Self.interestingBytes.count))]
            case 2:  // insert a random byte
                let index = Int(random.next() % UInt64(input.count + 1))
                input.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
            case 3 where !input.isEmpty:  // delete a range
                let start = Int(random.next() % UInt64(input.count))
                let end = min(input.count, start + 1 + Int(random.next() % 8))
                input.removeSubrange(start..<end)
            case 4:  // insert a token of the target's syntax
                let tokens = target.tokens
                let token = tokens[Int(random.next() % UInt64(tokens.count))]
                input.insert(contentsOf: token, at: Int(random.next() % UInt64(input.count + 1)))
            case 5 where !input.isEmpty:  // duplicate a range
                let start = Int(random.next() % UInt64(input.count))
                let end = min(input.count, start + 1 + Int(random.next() % 32))
                input.insert(contentsOf: input[start..<end], at: Int(random.next() % UInt64(input.count + 1)))
            case 6:  // splice with another seed
                let other = corpus[Int(random.next() % UInt64(corpus.count))]
                let cut = Int(random.next() % UInt64(input.count + 1))
                let otherCut = Int(random.next() % UInt64(other.count + 1))
                input = Array(input[..<cut]) + Array(other[otherCut...])
            case 7 where !input.isEmpty:  // a run of digits: numbers far out of range
                let index = Int(random.next() % UInt64(input.count + 1))
                let digit = UInt8(ascii: "0") + UInt8(random.next() % 10)
                input.insert(contentsOf: Array(repeating: digit, count: 1 + Int(random.next() % 40)), at: index)
            default:  // overwrite a byte with a random one
                guard !input.isEmpty else { continue }
                input[Int(random.next() % UInt64(input.count))] = UInt8(truncatingIfNeeded: random.next())
            }
        }
        if input.count > maximumLength { input.removeLast(input.count - maximumLength) }
        return input
    }

    static let interestingBytes: [UInt8] = [
        0, 0x07, 0x09, 0x0A, 0x0D, 0x1B, 0x20, 0x22, 0x2B, 0x2C, 0x2D, 0x2E, 0x30, 0x31, 0x39, 0x3A, 0x5B, 0x5C, 0x5D,
        0x65, 0x7B, 0x7D, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xE2, 0xED, 0xF0, 0xF4, 0xF8, 0xFF,
    ]
}
