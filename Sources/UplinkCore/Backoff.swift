/// Reconnect delays: exponential growth with full jitter.
///
/// For the `n`-th consecutive failed attempt (`n` = 0 for the first retry) the delay is drawn uniformly from
///
///     [0, min(maximum, initial × multiplierⁿ)]
///
/// ("full jitter"): agents that lost the collector at the same moment spread their reconnects over the whole
/// window instead of arriving in waves. The attempt counter returns to 0 once a stream has stayed healthy for
/// `resetAfter`.
public struct Backoff: Sendable, Equatable {
    /// Ceiling of the first delay. Default 250 ms.
    public var initial: Duration
    /// Growth of the ceiling per failed attempt. Default 2.
    public var multiplier: Double
    /// Largest ceiling. Default 30 s.
    public var maximum: Duration
    /// How long a stream must stay healthy before the attempt counter resets. Default 30 s.
    public var resetAfter: Duration

    public init(
        initial: Duration = .milliseconds(250),
        multiplier: Double = 2,
        maximum: Duration = .seconds(30),
        resetAfter: Duration = .seconds(30)
    ) {
        precondition(initial >= .zero && maximum >= initial && multiplier >= 1, "invalid backoff parameters")
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.resetAfter = resetAfter
    }

    /// The upper bound of the delay for the `attempt`-th retry: `min(maximum, initial × multiplier^attempt)`.
    public func ceiling(attempt: Int) -> Duration {
        let maximumNanoseconds = Double(maximum.nanoseconds)
        var ceiling = Double(initial.nanoseconds)
        // initial × multiplier^attempt by repeated squaring: at most 64 steps for any attempt. Every factor is ≥ 1,
        // so the partial product never exceeds the final one and the loop can stop as soon as it reaches the cap.
        var factor = multiplier
        var exponent = max(0, attempt)
        while exponent > 0 && ceiling > 0 && ceiling < maximumNanoseconds {
            if exponent & 1 == 1 { ceiling *= factor }
            factor *= factor
            exponent >>= 1
        }
        // Below the cap the value fits in Int64 (the cap's nanoseconds saturate at Int64.max).
        return ceiling < maximumNanoseconds ? .nanoseconds(Int64(ceiling)) : maximum
    }

    /// A delay drawn uniformly from `[0, ceiling(attempt)]` with `generator`.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let ceilingNanoseconds = ceiling(attempt: attempt).nanoseconds
        guard ceilingNanoseconds > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...ceilingNanoseconds, using: &generator))
    }
}

extension Duration {
    /// The duration in seconds as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds (saturating).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        if sumOverflow { return product < 0 ? .min : .max }
        return sum
    }
}

/// A small, fast, seedable random number generator (SplitMix64), so tests can reproduce jitter exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
