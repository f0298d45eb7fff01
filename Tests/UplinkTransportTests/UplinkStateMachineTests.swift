import Testing
import UplinkCore

@testable import UplinkTransport

@Suite("UplinkStateMachine")
struct UplinkStateMachineTests {
    typealias Machine = UplinkStateMachine
    typealias Action = UplinkStateMachine.Action
    typealias Instant = ContinuousClock.Instant

    func id(_ raw: Int) -> Machine.ConnectionID { .init(rawValue: raw) }

    let backoff = Backoff()  // 250 ms ×2 up to 30 s, reset after 30 s healthy
    let heartbeat = Duration.seconds(10)
    let stall = Duration.seconds(20)
    let drain = Duration.seconds(5)
    let seed: UInt64 = 0x5EED
    let t0 = ContinuousClock.now
    let tick = Duration.nanoseconds(1)

    func makeMachine(drainTimeout: Duration? = nil) -> Machine {
        Machine(backoff: backoff, heartbeatInterval: heartbeat, stallTimeout: stall, drainTimeout: drainTimeout ?? drain, seed: seed)
    }

    /// The reconnect delays the machine must produce for these exponents, drawn in order from the same seed.
    func expectedDelays(_ exponents: [Int]) -> [Duration] {
        var random = SplitMix64(seed: seed)
        return exponents.map { backoff.delay(attempt: $0, using: &random) }
    }

    func at(_ offset: Duration) -> Instant { t0 + offset }

    /// Opens connection `expected` at `t0 + offset`: start (or backoff elapsed), 200, resume.
    func open(
        _ machine: inout Machine, connection expected: Int = 1, at offset: Duration = .zero,
        collectorHas: UInt64 = 0, spaceFirst: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let now = at(offset)
        let connect = expected == 1 ? machine.start(now: now) : machine.backoffElapsed(now: now)
        #expect(connect == [.connect(id(expected))], sourceLocation: sourceLocation)
        if spaceFirst {
            #expect(machine.spaceAvailable(id(expected), now: now) == [], sourceLocation: sourceLocation)
        }
        #expect(machine.responseHead(id(expected), status: 200, now: now) == [], sourceLocation: sourceLocation)
        let resume = machine.resumeReceived(id(expected), collectorHas: collectorHas, now: now)
        let expectedResume: [Action] = spaceFirst ? [.resume(collectorHas: collectorHas), .write] : [.resume(collectorHas: collectorHas)]
        #expect(resume == expectedResume, sourceLocation: sourceLocation)
        #expect(machine.currentStream?.phase == .flowing, sourceLocation: sourceLocation)
    }

    func isBackingOff(_ machine: Machine) -> Bool {
        if case .backingOff = machine.state { true } else { false }
    }

    func drainDeadline(_ machine: Machine) -> Instant? {
        if case .draining(_, let deadline) = machine.state { deadline } else { nil }
    }

    // MARK: Start and connect

    @Test func startConnectsOnce() {
        var machine = makeMachine()
        #expect(machine.state == .idle)
        #expect(machine.currentStream == nil)
        #expect(machine.nextDeadline == nil)
        #expect(machine.start(now: t0) == [.connect(id(1))])
        let stream = machine.currentStream
        #expect(stream?.connection == id(1))
        #expect(stream?.phase == .awaitingResponse)
        #expect(stream?.openedAt == t0)
        #expect(stream?.lastLineAt == t0)
        #expect(stream?.canWrite == false)
        #expect(stream?.flowingSince == nil)
        #expect(machine.failedAttempts == 0)
        #expect(machine.start(now: at(.seconds(1))) == [])
        #expect(machine.currentStream == stream)
        #expect(id(1).description == "#1")
    }

    @Test func eventsBeforeStartDoNothing() {
        var machine = makeMachine()
        #expect(machine.backoffElapsed(now: t0) == [])
        #expect(machine.responseHead(id(1), status: 200, now: t0) == [])
        #expect(machine.resumeReceived(id(1), collectorHas: 0, now: t0) == [])
        #expect(machine.acknowledged(id(1), through: 1, everythingAcknowledged: true, now: t0) == [])
        #expect(machine.spaceAvailable(id(1), now: t0) == [])
        #expect(machine.dataAvailable(now: t0) == [])
        #expect(machine.wrote(id(1), lastSequence: 1, wroteBytes: true, pairFull: true, now: t0) == [])
        #expect(machine.failed(id(1), .responseEnded, now: t0) == [])
        #expect(machine.deadlinePassed(now: at(.seconds(1000))) == [])
        #expect(machine.state == .idle)
        #expect(machine.nextDeadline == nil)
    }

    @Test func status200AwaitsTheResumeLine() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.responseHead(id(1), status: 200, now: at(.seconds(1))) == [])
        #expect(machine.currentStream?.phase == .awaitingResume)
        #expect(machine.currentStream?.openedAt == t0)
        // A second head, of any status, is ignored.
        #expect(machine.responseHead(id(1), status: 200, now: at(.seconds(2))) == [])
        #expect(machine.responseHead(id(1), status: 500, now: at(.seconds(2))) == [])
        #expect(machine.currentStream?.phase == .awaitingResume)
    }

    @Test(arguments: [500, 502, 503, 504, 301, 302, 204, 201, 100, 600])
    func aNon200StatusFailsTheStreamWithABackoff(status: Int) {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        let actions = machine.responseHead(id(1), status: status, now: at(.seconds(1)))
        #expect(actions == [.failStream(id(1), .status(status), reconnectAfter: expectedDelays([0])[0])])
        #expect(isBackingOff(machine))
        #expect(machine.currentStream == nil)
        #expect(machine.nextDeadline == nil)
        #expect(machine.failedAttempts == 1)
        #expect(machine.backoffElapsed(now: at(.seconds(2))) == [.connect(id(2))])
        #expect(machine.currentStream?.openedAt == at(.seconds(2)))
    }

    @Test(arguments: [400, 401, 403, 404, 413, 429, 499])
    func aClientErrorBacksOffAtTheCap(status: Int) {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        var reference = SplitMix64(seed: seed)
        let atCap = Duration.nanoseconds(Int64.random(in: 0...backoff.maximum.nanoseconds, using: &reference))
        let nextDelay = backoff.delay(attempt: 1, using: &reference)
        #expect(machine.responseHead(id(1), status: status, now: t0) == [.failStream(id(1), .status(status), reconnectAfter: atCap)])
        #expect(atCap > backoff.ceiling(attempt: 0), "with this seed the draw is visibly above the first ceiling")
        #expect(machine.failedAttempts == 1)
        // The attempt counter still counts it: the next transient failure uses exponent 1.
        #expect(machine.backoffElapsed(now: t0) == [.connect(id(2))])
        #expect(machine.failed(id(2), .transport("refused"), now: t0) == [.failStream(id(2), .transport("refused"), reconnectAfter: nextDelay)])
    }

    @Test func consecutiveFailuresFollowTheBackoffSequence() {
        var machine = makeMachine()
        let failures: [StreamFailure] = [
            .transport("connection refused"), .status(503), .responseEnded, .noResume, .transport("reset"),
            .status(500), .status(502), .transport("x"), .responseEnded, .status(504), .status(500), .status(500),
        ]
        let delays = expectedDelays(Array(0..<failures.count))
        var now = t0
        for (attempt, failure) in failures.enumerated() {
            let connect = attempt == 0 ? machine.start(now: now) : machine.backoffElapsed(now: now)
            #expect(connect == [.connect(id(attempt + 1))])
            let actions: [Action]
            switch failure {
            case .status(let status): actions = machine.responseHead(id(attempt + 1), status: status, now: now)
            case .noResume:
                now = now + stall
                actions = machine.deadlinePassed(now: now)
            default: actions = machine.failed(id(attempt + 1), failure, now: now)
            }
            #expect(actions == [.failStream(id(attempt + 1), failure, reconnectAfter: delays[attempt])], "attempt \(attempt)")
            #expect(machine.failedAttempts == attempt + 1)
            if case .failStream(_, _, let delay?) = actions.first {
                #expect(delay <= backoff.ceiling(attempt: attempt))
                now = now + delay
            }
        }
    }

    @Test func backoffElapsedOnlyReconnectsWhileBackingOff() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.backoffElapsed(now: t0) == [])
        #expect(machine.currentStream?.connection == id(1))
        _ = machine.failed(id(1), .transport("refused"), now: t0)
        #expect(machine.backoffElapsed(now: t0) == [.connect(id(2))])
        #expect(machine.backoffElapsed(now: t0) == [])
        #expect(machine.start(now: t0) == [])
        #expect(machine.currentStream?.connection == id(2))
    }

    // MARK: Resume

    @Test func resumeStartsTheFlow() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.resumeReceived(id(1), collectorHas: 7, now: t0) == [], "no resume before the head")
        _ = machine.responseHead(id(1), status: 200, now: at(.seconds(1)))
        #expect(machine.resumeReceived(id(1), collectorHas: 7, now: at(.seconds(2))) == [.resume(collectorHas: 7)])
        let stream = machine.currentStream
        #expect(stream?.phase == .flowing)
        #expect(stream?.flowingSince == at(.seconds(2)))
        #expect(stream?.lastSent == 7)
        #expect(stream?.acknowledged == 7)
        #expect(stream?.lastLineAt == at(.seconds(2)))
        #expect(stream?.awaitingAckSince == nil)
        #expect(stream?.canWrite == false)
        #expect(machine.resumeReceived(id(1), collectorHas: 9, now: at(.seconds(3))) == [], "only one resume line")
        #expect(machine.currentStream == stream)
    }

    @Test func resumeAfterASpaceSignalAlsoWrites() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.spaceAvailable(id(1), now: t0) == [], "no write before the stream flows")
        #expect(machine.currentStream?.canWrite == true)
        _ = machine.responseHead(id(1), status: 200, now: t0)
        #expect(machine.dataAvailable(now: t0) == [])
        #expect(machine.spaceAvailable(id(1), now: t0) == [])
        #expect(machine.resumeReceived(id(1), collectorHas: 0, now: t0) == [.resume(collectorHas: 0), .write])
    }

    // MARK: Space, data and writes

    @Test func writesHappenOnlyWhileASpaceSignalIsHeld() {
        var machine = makeMachine()
        open(&machine)
        #expect(machine.dataAvailable(now: t0) == [], "no space signal yet")
        #expect(machine.spaceAvailable(id(1), now: at(.seconds(1))) == [.write])
        #expect(machine.currentStream?.canWrite == true)
        #expect(machine.dataAvailable(now: at(.seconds(1))) == [.write])
        #expect(machine.dataAvailable(now: at(.seconds(1))) == [.write])

        // A pass that emptied the ring keeps the signal.
        #expect(machine.wrote(id(1), lastSequence: 3, wroteBytes: true, pairFull: false, now: at(.seconds(2))) == [])
        #expect(machine.currentStream?.canWrite == true)
        #expect(machine.currentStream?.waitingForSpaceSince == nil)
        #expect(machine.dataAvailable(now: at(.seconds(2))) == [.write])

        // A pass that filled the pair gives it back until the pair signals space again.
        #expect(machine.wrote(id(1), lastSequence: 9, wroteBytes: true, pairFull: true, now: at(.seconds(3))) == [])
        #expect(machine.currentStream?.canWrite == false)
        #expect(machine.currentStream?.waitingForSpaceSince == at(.seconds(3)))
        #expect(machine.dataAvailable(now: at(.seconds(3))) == [])
        #expect(machine.wrote(id(1), lastSequence: nil, wroteBytes: false, pairFull: true, now: at(.seconds(4))) == [])
        #expect(machine.currentStream?.waitingForSpaceSince == at(.seconds(3)), "the first time the pair filled counts")
        #expect(machine.spaceAvailable(id(1), now: at(.seconds(5))) == [.write])
        #expect(machine.currentStream?.canWrite == true)
        #expect(machine.currentStream?.waitingForSpaceSince == nil)
    }

    @Test func wroteTracksTheLastSequenceAndLastLine() {
        var machine = makeMachine()
        open(&machine, collectorHas: 5, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 8, wroteBytes: true, pairFull: false, now: at(.seconds(1)))
        #expect(machine.currentStream?.lastSent == 8)
        #expect(machine.currentStream?.lastLineAt == at(.seconds(1)))
        _ = machine.wrote(id(1), lastSequence: 6, wroteBytes: true, pairFull: false, now: at(.seconds(2)))
        #expect(machine.currentStream?.lastSent == 8, "never moves back")
        #expect(machine.currentStream?.lastLineAt == at(.seconds(2)))
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: false, pairFull: false, now: at(.seconds(3)))
        #expect(machine.currentStream?.lastLineAt == at(.seconds(2)), "nothing written: the idle clock keeps running")
    }

    // MARK: Acknowledgements

    @Test func acknowledgementsMoveAndClearTheStallClock() {
        var machine = makeMachine()
        open(&machine, collectorHas: 0, spaceFirst: true)
        #expect(machine.currentStream?.awaitingAckSince == nil)
        _ = machine.wrote(id(1), lastSequence: 10, wroteBytes: true, pairFull: false, now: at(.seconds(1)))
        #expect(machine.currentStream?.awaitingAckSince == at(.seconds(1)))
        _ = machine.wrote(id(1), lastSequence: 15, wroteBytes: true, pairFull: false, now: at(.seconds(2)))
        #expect(machine.currentStream?.awaitingAckSince == at(.seconds(1)), "the oldest outstanding write counts")

        #expect(machine.acknowledged(id(1), through: 5, everythingAcknowledged: false, now: at(.seconds(3))) == [])
        #expect(machine.currentStream?.acknowledged == 5)
        #expect(machine.currentStream?.awaitingAckSince == at(.seconds(3)), "progress restarts the clock")

        #expect(machine.acknowledged(id(1), through: 4, everythingAcknowledged: false, now: at(.seconds(4))) == [])
        #expect(machine.currentStream?.acknowledged == 5)
        #expect(machine.currentStream?.awaitingAckSince == at(.seconds(3)), "an old ack is no progress")
        #expect(machine.acknowledged(id(1), through: 5, everythingAcknowledged: false, now: at(.seconds(4))) == [])
        #expect(machine.currentStream?.awaitingAckSince == at(.seconds(3)))

        #expect(machine.acknowledged(id(1), through: 15, everythingAcknowledged: true, now: at(.seconds(5))) == [])
        #expect(machine.currentStream?.acknowledged == 15)
        #expect(machine.currentStream?.awaitingAckSince == nil, "nothing outstanding")
        #expect(machine.state != .finished, "everything acknowledged ends only a drain")

        // Acks beyond what this stream sent (records sent on an earlier stream) leave nothing outstanding.
        _ = machine.wrote(id(1), lastSequence: 20, wroteBytes: true, pairFull: false, now: at(.seconds(6)))
        #expect(machine.acknowledged(id(1), through: 25, everythingAcknowledged: true, now: at(.seconds(7))) == [])
        #expect(machine.currentStream?.awaitingAckSince == nil)
        // Writing below the acknowledged point does not start the clock either once nothing is newer.
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: false, now: at(.seconds(8)))
        #expect(machine.currentStream?.awaitingAckSince == nil)
    }

    @Test func acknowledgementsBeforeTheFlowAreIgnored() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.acknowledged(id(1), through: 3, everythingAcknowledged: true, now: t0) == [])
        _ = machine.responseHead(id(1), status: 200, now: t0)
        #expect(machine.acknowledged(id(1), through: 3, everythingAcknowledged: true, now: t0) == [])
        #expect(machine.currentStream?.acknowledged == 0)
    }

    // MARK: Deadlines

    @Test func noResponseWithinTheStallTimeoutFails() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        #expect(machine.nextDeadline == t0 + stall)
        #expect(machine.deadlinePassed(now: t0 + stall - tick) == [])
        #expect(machine.deadlinePassed(now: t0 + stall) == [.failStream(id(1), .noResume, reconnectAfter: expectedDelays([0])[0])])
        #expect(isBackingOff(machine))
    }

    @Test func noResumeLineWithinTheStallTimeoutFailsCountingFromTheConnect() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        _ = machine.responseHead(id(1), status: 200, now: at(.seconds(15)))
        #expect(machine.nextDeadline == t0 + stall)
        _ = machine.spaceAvailable(id(1), now: at(.seconds(16)))
        #expect(machine.nextDeadline == t0 + stall, "no heartbeat before the flow")
        #expect(machine.deadlinePassed(now: t0 + stall - tick) == [])
        #expect(machine.deadlinePassed(now: t0 + stall + .seconds(100)) == [.failStream(id(1), .noResume, reconnectAfter: expectedDelays([0])[0])])
    }

    @Test func outstandingRecordsWithoutAnAckFail() {
        var machine = makeMachine()
        open(&machine)
        #expect(machine.nextDeadline == nil, "flowing, nothing outstanding, no space signal: nothing to watch")
        _ = machine.spaceAvailable(id(1), now: t0)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: true, now: at(.seconds(1)))
        #expect(machine.nextDeadline == at(.seconds(1)) + stall)
        #expect(machine.deadlinePassed(now: at(.seconds(1)) + stall - tick) == [])
        _ = machine.spaceAvailable(id(1), now: at(.seconds(2)))  // the pair drains, but no ack comes
        #expect(machine.nextDeadline == at(.seconds(1)) + heartbeat, "the heartbeat comes first")
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: false, now: at(.seconds(11)))  // heartbeat
        #expect(machine.nextDeadline == at(.seconds(1)) + stall)
        #expect(machine.deadlinePassed(now: at(.seconds(1)) + stall) == [.failStream(id(1), .ackStall, reconnectAfter: expectedDelays([0])[0])])
    }

    @Test func anAckPostponesTheStall() {
        var machine = makeMachine()
        open(&machine)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.acknowledged(id(1), through: 2, everythingAcknowledged: false, now: at(.seconds(15)))
        #expect(machine.nextDeadline == at(.seconds(15)) + stall)
        #expect(machine.deadlinePassed(now: t0 + stall) == [])
        _ = machine.acknowledged(id(1), through: 4, everythingAcknowledged: true, now: at(.seconds(30)))
        #expect(machine.nextDeadline == nil)
        #expect(machine.deadlinePassed(now: at(.seconds(1000))) == [])
    }

    @Test func aPairWithoutRoomForTheStallTimeoutFails() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: true, now: at(.seconds(1)))
        #expect(machine.nextDeadline == at(.seconds(1)) + stall)
        #expect(machine.deadlinePassed(now: at(.seconds(1)) + stall - tick) == [])
        #expect(machine.deadlinePassed(now: at(.seconds(1)) + stall) == [.failStream(id(1), .writeStall, reconnectAfter: expectedDelays([0])[0])])
    }

    @Test func spaceClearsTheWriteStall() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: true, now: at(.seconds(1)))
        _ = machine.spaceAvailable(id(1), now: at(.seconds(19)))
        #expect(machine.nextDeadline == at(.seconds(1)) + heartbeat, "only the heartbeat is due")
        #expect(machine.deadlinePassed(now: at(.seconds(21))) == [.sendHeartbeat], "no write stall")
    }

    @Test func anAckStallIsReportedBeforeAWriteStall() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 3, wroteBytes: true, pairFull: true, now: at(.seconds(1)))
        #expect(machine.deadlinePassed(now: at(.seconds(30))) == [.failStream(id(1), .ackStall, reconnectAfter: expectedDelays([0])[0])])
    }

    @Test func heartbeatsGoOutWhenIdleForTheIntervalAndWritable() {
        var machine = makeMachine()
        open(&machine, at: .seconds(1), spaceFirst: true)
        let flowing = at(.seconds(1))
        #expect(machine.nextDeadline == flowing + heartbeat)
        #expect(machine.deadlinePassed(now: flowing + heartbeat - tick) == [])
        #expect(machine.deadlinePassed(now: flowing + heartbeat) == [.sendHeartbeat])
        #expect(machine.currentStream?.lastLineAt == flowing + heartbeat)
        #expect(machine.nextDeadline == flowing + heartbeat + heartbeat)
        #expect(machine.deadlinePassed(now: flowing + heartbeat + .seconds(1)) == [], "not again before the interval")

        // A record line resets the idle clock.
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: false, now: flowing + .seconds(15))
        #expect(machine.nextDeadline == flowing + .seconds(25))
        #expect(machine.deadlinePassed(now: flowing + .seconds(20)) == [])
        #expect(machine.deadlinePassed(now: flowing + .seconds(25)) == [.sendHeartbeat])
        // Late timers send one heartbeat, not one per missed interval.
        #expect(machine.deadlinePassed(now: flowing + .seconds(100)) == [.sendHeartbeat])
        #expect(machine.deadlinePassed(now: flowing + .seconds(100)) == [])
    }

    @Test func noHeartbeatWithoutASpaceSignal() {
        var machine = makeMachine()
        open(&machine, at: .seconds(1))
        #expect(machine.nextDeadline == nil)
        #expect(machine.deadlinePassed(now: at(.seconds(500))) == [])
        _ = machine.spaceAvailable(id(1), now: at(.seconds(2)))
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: true, pairFull: true, now: at(.seconds(3)))
        #expect(machine.nextDeadline == at(.seconds(3)) + stall, "only the write stall is watched")
        #expect(machine.deadlinePassed(now: at(.seconds(3)) + heartbeat) == [])
    }

    @Test func nextDeadlineIsTheEarliestOfAllClocks() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        #expect(machine.nextDeadline == t0 + heartbeat)
        _ = machine.wrote(id(1), lastSequence: 5, wroteBytes: true, pairFull: false, now: at(.seconds(9)))
        // ack stall at 29 s, heartbeat at 19 s
        #expect(machine.nextDeadline == at(.seconds(19)))
        _ = machine.wrote(id(1), lastSequence: nil, wroteBytes: false, pairFull: true, now: at(.seconds(12)))
        // ack stall 29 s, write stall 32 s, no heartbeat while the pair is full
        #expect(machine.nextDeadline == at(.seconds(29)))
        _ = machine.acknowledged(id(1), through: 5, everythingAcknowledged: true, now: at(.seconds(13)))
        #expect(machine.nextDeadline == at(.seconds(32)))
    }

    @Test func deadlinesDoNothingOutsideAStream() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        _ = machine.failed(id(1), .responseEnded, now: t0)
        #expect(machine.nextDeadline == nil)
        #expect(machine.deadlinePassed(now: at(.seconds(1000))) == [])
        #expect(isBackingOff(machine))
    }

    // MARK: Stale connections

    @Test func eventsForOtherConnectionsAreIgnored() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        _ = machine.failed(id(1), .transport("refused"), now: t0)

        // While backing off, nothing is current.
        func expectIgnored(_ connection: Machine.ConnectionID, _ note: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
            let before = machine.state
            let attempts = machine.failedAttempts
            #expect(machine.responseHead(connection, status: 500, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.responseHead(connection, status: 200, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.resumeReceived(connection, collectorHas: 3, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.acknowledged(connection, through: 9, everythingAcknowledged: true, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.spaceAvailable(connection, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.wrote(connection, lastSequence: 9, wroteBytes: true, pairFull: true, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.failed(connection, .responseEnded, now: at(.seconds(1))) == [], note, sourceLocation: sourceLocation)
            #expect(machine.state == before, note, sourceLocation: sourceLocation)
            #expect(machine.failedAttempts == attempts, note, sourceLocation: sourceLocation)
        }
        expectIgnored(id(1), "backing off")

        _ = machine.backoffElapsed(now: at(.seconds(1)))
        expectIgnored(id(1), "#2 awaiting its response")
        expectIgnored(id(3), "a connection not opened yet")
        _ = machine.responseHead(id(2), status: 200, now: at(.seconds(1)))
        expectIgnored(id(1), "#2 awaiting resume")
        _ = machine.resumeReceived(id(2), collectorHas: 0, now: at(.seconds(1)))
        expectIgnored(id(1), "#2 flowing")
        _ = machine.wrote(id(2), lastSequence: 5, wroteBytes: true, pairFull: false, now: at(.seconds(1)))
        #expect(machine.shutdown(everythingAcknowledged: false, now: at(.seconds(2))) == [])
        expectIgnored(id(1), "#2 draining")
        #expect(machine.failed(id(2), .responseEnded, now: at(.seconds(2))) == [.failStream(id(2), .responseEnded, reconnectAfter: nil), .finish])
        expectIgnored(id(2), "finished")
    }

    // MARK: Backoff reset

    @Test func theAttemptCounterResetsAfterAHealthyStream() {
        var machine = makeMachine()
        let delays = expectedDelays([0, 1, 0, 1, 2, 0])
        var now = t0
        _ = machine.start(now: now)
        #expect(machine.failed(id(1), .transport("a"), now: now) == [.failStream(id(1), .transport("a"), reconnectAfter: delays[0])])
        _ = machine.backoffElapsed(now: now)
        #expect(machine.failed(id(2), .transport("b"), now: now) == [.failStream(id(2), .transport("b"), reconnectAfter: delays[1])])
        #expect(machine.failedAttempts == 2)

        // #3 flows for exactly resetAfter: healthy.
        open(&machine, connection: 3, at: .seconds(100), spaceFirst: true)
        now = at(.seconds(100)) + backoff.resetAfter
        #expect(machine.failed(id(3), .responseEnded, now: now) == [.failStream(id(3), .responseEnded, reconnectAfter: delays[2])])
        #expect(machine.failedAttempts == 1)

        // #4 flows a tick less than resetAfter: the counter keeps growing.
        open(&machine, connection: 4, at: .seconds(200))
        now = at(.seconds(200)) + backoff.resetAfter - tick
        #expect(machine.failed(id(4), .responseEnded, now: now) == [.failStream(id(4), .responseEnded, reconnectAfter: delays[3])])
        #expect(machine.failedAttempts == 2)

        // #5 took long to get its resume line: the healthy time counts from the flow, not from the connect.
        _ = machine.backoffElapsed(now: at(.seconds(300)))
        _ = machine.responseHead(id(5), status: 200, now: at(.seconds(300)))
        _ = machine.resumeReceived(id(5), collectorHas: 0, now: at(.seconds(319)))
        #expect(machine.failed(id(5), .ackStall, now: at(.seconds(340))) == [.failStream(id(5), .ackStall, reconnectAfter: delays[4])])
        #expect(machine.failedAttempts == 3)

        // A long healthy stream resets the counter however many failures came before.
        open(&machine, connection: 6, at: .seconds(400))
        #expect(machine.deadlinePassed(now: at(.seconds(400)) + .seconds(3600)) == [])
        #expect(machine.failed(id(6), .responseEnded, now: at(.seconds(400)) + .seconds(3600)) == [
            .failStream(id(6), .responseEnded, reconnectAfter: delays[5]),
        ])
        #expect(machine.failedAttempts == 1)
    }

    @Test func aStreamThatNeverFlowsNeverResetsTheCounter() {
        var machine = makeMachine()
        let delays = expectedDelays([0, 1, 2])
        _ = machine.start(now: t0)
        #expect(machine.failed(id(1), .transport("a"), now: t0) == [.failStream(id(1), .transport("a"), reconnectAfter: delays[0])])
        _ = machine.backoffElapsed(now: t0)
        #expect(machine.failed(id(2), .transport("b"), now: t0) == [.failStream(id(2), .transport("b"), reconnectAfter: delays[1])])
        _ = machine.backoffElapsed(now: t0)
        _ = machine.responseHead(id(3), status: 200, now: t0)
        // Awaiting the resume line far longer than resetAfter, then the noResume stall.
        #expect(machine.deadlinePassed(now: t0 + .seconds(3600)) == [.failStream(id(3), .noResume, reconnectAfter: delays[2])])
        #expect(machine.failedAttempts == 3)
    }
}

