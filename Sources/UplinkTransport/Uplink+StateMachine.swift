import UplinkCore

/// The uplink's decisions, as a value type: it takes events (with the current time) and returns the actions its
/// owner (`Uplink`) performs. It does no I/O, so every path through it is tested without sockets or clocks.
///
/// One stream at a time goes through three phases: waiting for the response head, waiting for the collector's
/// `resume` line, and flowing. The writer may write only while it holds a space-available signal that the pair has
/// not taken back by filling up (`canWrite`); data arriving while it holds one is written at once.
struct UplinkStateMachine {
    typealias Instant = ContinuousClock.Instant

    struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        let rawValue: Int
        var description: String { "#\(rawValue)" }
    }

    enum Phase: Equatable {
        case awaitingResponse
        case awaitingResume
        case flowing
    }

    struct Stream: Equatable {
        var connection: ConnectionID
        var phase: Phase
        var openedAt: Instant
        var flowingSince: Instant?
        /// A space-available signal is held and the pair has not filled since.
        var canWrite = false
        /// The pair filled up at this time and has not signalled space since.
        var waitingForSpaceSince: Instant?
        /// Highest sequence written on this stream (starts at the resume point).
        var lastSent: UInt64 = 0
        var acknowledged: UInt64 = 0
        /// Records are outstanding and the acknowledgement clock runs since this time.
        var awaitingAckSince: Instant?
        /// When the last line (record or heartbeat) was written.
        var lastLineAt: Instant
    }

    enum State: Equatable {
        case idle
        case streaming(Stream)
        case backingOff
        case draining(Stream, deadline: Instant)
        case finished
    }

    enum Action: Equatable {
        /// Open stream `ConnectionID`: a new pair and a new request.
        case connect(ConnectionID)
        /// The collector holds everything up to the sequence: release it and rewind the ring to send after it.
        case resume(collectorHas: UInt64)
        /// Copy frames from the ring into the pair while it takes them.
        case write
        /// Write a heartbeat line.
        case sendHeartbeat
        /// Close the broken stream and reconnect after the delay (nil: do not reconnect).
        case failStream(ConnectionID, StreamFailure, reconnectAfter: Duration?)
        /// End the request body cleanly.
        case endStream(ConnectionID)
        /// Stop: the uplink's work is done.
        case finish
    }

    let backoff: Backoff
    let heartbeatInterval: Duration
    let stallTimeout: Duration
    let drainTimeout: Duration
    private(set) var state: State = .idle
    /// A hand-over to a new uplink is under way (`handOver`): the stream takes no new frames, only what a write
    /// pass already took from the ring, and ends once the collector acknowledged everything sent on it.
    private(set) var handingOver = false
    /// Consecutive failed attempts, the exponent of the next backoff.
    private(set) var failedAttempts = 0
    private var nextConnection = 1
    private var random: SplitMix64

    init(backoff: Backoff, heartbeatInterval: Duration, stallTimeout: Duration, drainTimeout: Duration, seed: UInt64) {
        self.backoff = backoff
        self.heartbeatInterval = heartbeatInterval
        self.stallTimeout = stallTimeout
        self.drainTimeout = drainTimeout
        self.random = SplitMix64(seed: seed)
    }

    /// The stream currently open or being drained.
    var currentStream: Stream? {
        switch state {
        case .streaming(let stream), .draining(let stream, _): stream
        default: nil
        }
    }

    // MARK: Events

    mutating func start(now: Instant) -> [Action] {
        guard case .idle = state else { return [] }
        return [openStream(now: now)]
    }

    mutating func backoffElapsed(now: Instant) -> [Action] {
        guard case .backingOff = state else { return [] }
        return [openStream(now: now)]
    }

    mutating func responseHead(_ connection: ConnectionID, status: Int, now: Instant) -> [Action] {
        guard var stream = current(connection), stream.phase == .awaitingResponse else { return [] }
        guard status == 200 else { return fail(connection, .status(status), now: now) }
        stream.phase = .awaitingResume
        update(stream)
        return []
    }

    mutating func resumeReceived(_ connection: ConnectionID, collectorHas sequence: UInt64, now: Instant) -> [Action] {
        guard var stream = current(connection), stream.phase == .awaitingResume else { return [] }
        stream.phase = .flowing
        stream.flowingSince = now
        stream.lastSent = sequence
        stream.acknowledged = sequence
        stream.lastLineAt = now
        update(stream)
        return stream.canWrite ? [.resume(collectorHas: sequence), .write] : [.resume(collectorHas: sequence)]
    }

    /// An ack line arrived; the owner has already released the frames in the ring. `everythingAcknowledged` tells
    /// whether the ring now holds nothing (which ends a drain).
    mutating func acknowledged(
        _ connection: ConnectionID, through sequence: UInt64, everythingAcknowledged: Bool, now: Instant
    ) -> [Action] {
        guard var stream = current(connection), stream.phase == .flowing else { return [] }
        if sequence > stream.acknowledged {
            stream.acknowledged = sequence
            stream.awaitingAckSince = stream.lastSent > sequence ? now : nil
        }
        update(stream)
        if case .draining = state, handingOver ? stream.acknowledged >= stream.lastSent : everythingAcknowledged {
            return finish(ending: connection)
        }
        return []
    }

    mutating func spaceAvailable(_ connection: ConnectionID, now: Instant) -> [Action] {
        guard var stream = current(connection) else { return [] }
        stream.canWrite = true
        stream.waitingForSpaceSince = nil
        update(stream)
        return stream.phase == .flowing ? [.write] : []
    }

    /// The ring signalled new frames after the owner asked to be told.
    mutating func dataAvailable(now: Instant) -> [Action] {
        guard let stream = currentStream, stream.phase == .flowing, stream.canWrite, !handingOver else { return [] }
        return [.write]
    }

    /// The owner finished a write pass. `lastSequence` is the highest sequence it wrote (nil: no record), `wroteBytes`
    /// whether any line went out, `pairFull` whether the pair turned bytes away (a space signal will follow).
    mutating func wrote(
        _ connection: ConnectionID, lastSequence: UInt64?, wroteBytes: Bool, pairFull: Bool, now: Instant
    ) -> [Action] {
        guard var stream = current(connection) else { return [] }
        if let lastSequence, lastSequence > stream.lastSent {
            stream.lastSent = lastSequence
            if stream.awaitingAckSince == nil { stream.awaitingAckSince = now }
        }
        if wroteBytes { stream.lastLineAt = now }
        if pairFull {
            stream.canWrite = false
            if stream.waitingForSpaceSince == nil { stream.waitingForSpaceSince = now }
        }
        update(stream)
        return []
    }

    mutating func failed(_ connection: ConnectionID, _ failure: StreamFailure, now: Instant) -> [Action] {
        guard current(connection) != nil else { return [] }
        return fail(connection, failure, now: now)
    }

    /// Checks the deadlines; the owner calls this when `nextDeadline` has passed.
    mutating func deadlinePassed(now: Instant) -> [Action] {
        guard var stream = currentStream else { return [] }
        if case .draining(_, let deadline) = state, now >= deadline {
            return finish(ending: stream.connection)
        }
        switch stream.phase {
        case .awaitingResponse, .awaitingResume:
            if now - stream.openedAt >= stallTimeout { return fail(stream.connection, .noResume, now: now) }
        case .flowing:
            if let since = stream.awaitingAckSince, now - since >= stallTimeout {
                return fail(stream.connection, .ackStall, now: now)
            }
            if let since = stream.waitingForSpaceSince, now - since >= stallTimeout {
                return fail(stream.connection, .writeStall, now: now)
            }
            if stream.canWrite && now - stream.lastLineAt >= heartbeatInterval {
                stream.lastLineAt = now
                update(stream)
                return [.sendHeartbeat]
            }
        }
        return []
    }

    /// Graceful shutdown was requested. `everythingAcknowledged` tells whether the ring holds nothing.
    ///
    /// With records outstanding the stream drains until `drainTimeout`: a flowing stream sends what the ring holds; a
    /// stream still opening is waited for within the same deadline, then sends (the resume may already acknowledge
    /// everything). A backing-off uplink finishes at once: the collector was unreachable a moment ago.
    mutating func shutdown(everythingAcknowledged: Bool, now: Instant) -> [Action] {
        switch state {
        case .streaming(let stream) where !everythingAcknowledged:
            state = .draining(stream, deadline: now + drainTimeout)
            return stream.phase == .flowing && stream.canWrite ? [.write] : []
        case .streaming(let stream):
            return finish(ending: stream.connection)
        case .idle, .backingOff:
            return finish(ending: nil)
        case .draining, .finished:
            return []
        }
    }

    /// Ends the uplink, and first the stream on `connection` when there is one.
    private mutating func finish(ending connection: ConnectionID?) -> [Action] {
        state = .finished
        return connection.map { [.endStream($0), .finish] } ?? [.finish]
    }

    /// Another uplink takes over the ring (a reload changed the uplink settings). Unlike `shutdown`, which sends
    /// everything the ring holds, this sends nothing new: it waits until the collector acknowledged what this stream
    /// carried (at most `drainTimeout`), then ends the stream, so no record is stored by this collector without the
    /// agent knowing, and the next stream, perhaps to another collector, duplicates nothing.
    mutating func handOver(now: Instant) -> [Action] {
        switch state {
        case .streaming(let stream) where stream.phase == .flowing:
            handingOver = true
            if stream.acknowledged >= stream.lastSent {
                return finish(ending: stream.connection)
            }
            state = .draining(stream, deadline: now + drainTimeout)
            return []
        case .streaming(let stream):
            // Nothing was written on a stream that is not flowing yet.
            return finish(ending: stream.connection)
        case .idle, .backingOff:
            return finish(ending: nil)
        case .draining(let stream, _):
            // A shutdown drain became a hand-over: stop taking new frames and end once what was sent is acknowledged.
            handingOver = true
            guard stream.acknowledged < stream.lastSent else {
                return finish(ending: stream.connection)
            }
            return []
        case .finished:
            return []
        }
    }

    /// The earliest time at which `deadlinePassed` has something to check, or nil.
    var nextDeadline: Instant? {
        guard let stream = currentStream else { return nil }
        // Asked after every event the driver handles: the earliest is kept as it goes, without a list of candidates.
        var earliest: Instant?
        func consider(_ instant: Instant) {
            if let current = earliest, current <= instant { return }
            earliest = instant
        }
        if case .draining(_, let deadline) = state { consider(deadline) }
        switch stream.phase {
        case .awaitingResponse, .awaitingResume:
            consider(stream.openedAt + stallTimeout)
        case .flowing:
            if let since = stream.awaitingAckSince { consider(since + stallTimeout) }
            if let since = stream.waitingForSpaceSince { consider(since + stallTimeout) }
            if stream.canWrite { consider(stream.lastLineAt + heartbeatInterval) }
        }
        return earliest
    }

    // MARK: Helpers

    private func current(_ connection: ConnectionID) -> Stream? {
        guard let stream = currentStream, stream.connection == connection else { return nil }
        return stream
    }

    private mutating func update(_ stream: Stream) {
        switch state {
        case .streaming: state = .streaming(stream)
        case .draining(_, let deadline): state = .draining(stream, deadline: deadline)
        default: break
        }
    }

    private mutating func openStream(now: Instant) -> Action {
        let connection = ConnectionID(rawValue: nextConnection)
        nextConnection += 1
        state = .streaming(Stream(connection: connection, phase: .awaitingResponse, openedAt: now, lastLineAt: now))
        return .connect(connection)
    }

    private mutating func fail(_ connection: ConnectionID, _ failure: StreamFailure, now: Instant) -> [Action] {
        if case .draining = state {
            state = .finished
            return [.failStream(connection, failure, reconnectAfter: nil), .finish]
        }
        if let since = currentStream?.flowingSince, now - since >= backoff.resetAfter {
            failedAttempts = 0
        }
        // A configuration problem (4xx) will not fix itself soon: wait at the longest ceiling.
        let exponent = failure.isConfigurationProblem ? Int.max / 2 : failedAttempts
        let delay = backoff.delay(attempt: exponent, using: &random)
        failedAttempts += 1
        state = .backingOff
        return [.failStream(connection, failure, reconnectAfter: delay)]
    }
}
