import Testing
import UplinkCore

@testable import UplinkTransport

/// Graceful shutdown and the drain; `StreamFailure`.
extension UplinkStateMachineTests {
    // MARK: Shutdown

    @Test func shutdownWhileIdleOrBackingOffFinishesAtOnce() {
        var idle = makeMachine()
        #expect(idle.shutdown(everythingAcknowledged: false, now: t0) == [.finish])
        #expect(idle.state == .finished)

        var backingOff = makeMachine()
        _ = backingOff.start(now: t0)
        _ = backingOff.failed(id(1), .transport("refused"), now: t0)
        #expect(backingOff.shutdown(everythingAcknowledged: false, now: t0) == [.finish])
        #expect(backingOff.state == .finished)
        #expect(backingOff.backoffElapsed(now: t0) == [], "no reconnect after shutdown")
    }

    @Test(arguments: [false, true])
    func shutdownBeforeTheFlowWithNothingOutstandingEndsTheStreamAtOnce(headReceived: Bool) {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        if headReceived { _ = machine.responseHead(id(1), status: 200, now: t0) }
        #expect(machine.shutdown(everythingAcknowledged: true, now: t0) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
    }

    @Test(arguments: [false, true])
    func shutdownWhileTheStreamOpensWaitsForItThenSends(headReceived: Bool) {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        if headReceived { _ = machine.responseHead(id(1), status: 200, now: t0) }
        #expect(machine.shutdown(everythingAcknowledged: false, now: at(.seconds(1))) == [], "nothing to write on yet")
        #expect(drainDeadline(machine) == at(.seconds(1)) + drain)
        if !headReceived { #expect(machine.responseHead(id(1), status: 200, now: at(.seconds(2))) == []) }
        #expect(machine.resumeReceived(id(1), collectorHas: 3, now: at(.seconds(2))) == [.resume(collectorHas: 3)])
        #expect(machine.spaceAvailable(id(1), now: at(.seconds(2))) == [.write], "the drain sends once the stream flows")
        _ = machine.wrote(id(1), lastSequence: 9, wroteBytes: true, pairFull: false, now: at(.seconds(2)))
        #expect(machine.acknowledged(id(1), through: 9, everythingAcknowledged: true, now: at(.seconds(3))) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
    }

    @Test func aStreamThatDoesNotOpenBeforeTheDrainDeadlineEndsTheShutdown() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: t0)
        #expect(machine.nextDeadline == t0 + drain)
        #expect(machine.deadlinePassed(now: t0 + drain) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
    }

    @Test func aStreamRefusedDuringTheShutdownDrainIsNotRetried() {
        var machine = makeMachine()
        _ = machine.start(now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: t0)
        #expect(machine.responseHead(id(1), status: 503, now: at(.seconds(1))) == [
            .failStream(id(1), .status(503), reconnectAfter: nil), .finish,
        ])
        #expect(machine.state == .finished)
    }

    @Test func shutdownWithEverythingAcknowledgedEndsTheStreamAtOnce() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        #expect(machine.shutdown(everythingAcknowledged: true, now: t0) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
        #expect(machine.nextDeadline == nil)
    }

    @Test(arguments: [false, true])
    func shutdownWithOutstandingRecordsDrainsUntilADeadline(canWrite: Bool) {
        var machine = makeMachine()
        open(&machine, spaceFirst: canWrite)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        let now = at(.seconds(1))
        #expect(machine.shutdown(everythingAcknowledged: false, now: now) == (canWrite ? [.write] : []))
        #expect(drainDeadline(machine) == now + drain)
        #expect(machine.currentStream?.connection == id(1))
        #expect(machine.nextDeadline == now + drain)
        #expect(machine.shutdown(everythingAcknowledged: false, now: now) == [], "a second request changes nothing")
        #expect(machine.start(now: now) == [])
        #expect(drainDeadline(machine) == now + drain)
    }

    @Test func theDrainKeepsWritingAndEndsWhenEverythingIsAcknowledged() {
        var machine = makeMachine()
        open(&machine)
        _ = machine.spaceAvailable(id(1), now: t0)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: true, now: t0)
        #expect(machine.shutdown(everythingAcknowledged: false, now: t0) == [])
        #expect(machine.dataAvailable(now: t0) == [])
        #expect(machine.spaceAvailable(id(1), now: at(.seconds(1))) == [.write])
        #expect(machine.dataAvailable(now: at(.seconds(1))) == [.write])
        _ = machine.wrote(id(1), lastSequence: 6, wroteBytes: true, pairFull: false, now: at(.seconds(1)))
        #expect(machine.acknowledged(id(1), through: 4, everythingAcknowledged: false, now: at(.seconds(2))) == [])
        #expect(drainDeadline(machine) != nil)
        #expect(machine.acknowledged(id(1), through: 6, everythingAcknowledged: true, now: at(.seconds(3))) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
        #expect(machine.nextDeadline == nil)
    }

    @Test func theDrainEndsWhenItsDeadlinePasses() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: at(.seconds(1)))
        let deadline = at(.seconds(1)) + drain
        #expect(machine.deadlinePassed(now: deadline - tick) == [])
        #expect(machine.deadlinePassed(now: deadline) == [.endStream(id(1)), .finish])
        #expect(machine.state == .finished)
        #expect(machine.deadlinePassed(now: deadline + .seconds(100)) == [])
    }

    @Test func theDrainDeadlineWinsOverOtherClocks() {
        var machine = makeMachine(drainTimeout: .seconds(30))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: at(.seconds(1)))
        // Late timer: drain deadline (31 s) and ack stall (20 s) both passed.
        #expect(machine.deadlinePassed(now: at(.seconds(40))) == [.endStream(id(1)), .finish])
    }

    // MARK: Hand-over

    @Test func aHandOverSendsNothingNewAndEndsOnceWhatWasSentIsAcknowledged() {
        var machine = makeMachine(drainTimeout: .seconds(60))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        #expect(machine.handOver(now: at(.seconds(1))) == [])
        #expect(machine.handingOver)
        // New frames in the ring are not written; space only finishes a fill already taken.
        #expect(machine.dataAvailable(now: at(.seconds(1))) == [])
        // The ring is never empty (sources keep appending), yet the ack of what was sent ends the stream.
        #expect(machine.acknowledged(id(1), through: 3, everythingAcknowledged: false, now: at(.seconds(2))) == [])
        #expect(machine.acknowledged(id(1), through: 4, everythingAcknowledged: false, now: at(.seconds(2))) == [
            .endStream(id(1)), .finish,
        ])
        #expect(machine.state == .finished)
    }

    @Test func aHandOverWithNothingOutstandingEndsAtOnce() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.acknowledged(id(1), through: 4, everythingAcknowledged: false, now: t0)
        #expect(machine.handOver(now: t0) == [.endStream(id(1)), .finish])

        var connecting = makeMachine()
        _ = connecting.start(now: t0)
        #expect(connecting.handOver(now: t0) == [.endStream(id(1)), .finish])

        var backingOff = makeMachine()
        _ = backingOff.start(now: t0)
        _ = backingOff.failed(id(1), .transport("refused"), now: t0)
        #expect(backingOff.handOver(now: t0) == [.finish])
        #expect(backingOff.backoffElapsed(now: t0) == [], "no reconnect after a hand-over")
    }

    @Test func aHandOverThatIsNotAcknowledgedEndsAtTheDrainDeadline() {
        var machine = makeMachine(drainTimeout: .seconds(5))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.handOver(now: t0)
        #expect(machine.deadlinePassed(now: at(.seconds(5))) == [.endStream(id(1)), .finish])
    }

    @Test func aShutdownDrainTurnedHandOverStopsChasingTheRing() {
        var machine = makeMachine(drainTimeout: .seconds(60))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: t0)
        #expect(machine.handOver(now: t0) == [])
        #expect(machine.acknowledged(id(1), through: 4, everythingAcknowledged: false, now: at(.seconds(1))) == [
            .endStream(id(1)), .finish,
        ])
    }

    @Test func heartbeatsContinueDuringTheDrain() {
        var machine = makeMachine(drainTimeout: .seconds(60))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.acknowledged(id(1), through: 3, everythingAcknowledged: false, now: at(.seconds(9)))
        _ = machine.shutdown(everythingAcknowledged: false, now: at(.seconds(9)))
        #expect(machine.nextDeadline == t0 + heartbeat)
        #expect(machine.deadlinePassed(now: t0 + heartbeat) == [.sendHeartbeat])
    }

    @Test func aFailureDuringTheDrainFinishesWithoutReconnecting() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: t0)
        #expect(machine.failed(id(1), .transport("reset"), now: at(.seconds(1))) == [
            .failStream(id(1), .transport("reset"), reconnectAfter: nil), .finish,
        ])
        #expect(machine.state == .finished)
        #expect(machine.failedAttempts == 0)
        #expect(machine.backoffElapsed(now: at(.seconds(2))) == [])
    }

    @Test func aStallDuringTheDrainFinishesWithoutReconnecting() {
        var machine = makeMachine(drainTimeout: .seconds(60))
        open(&machine, spaceFirst: true)
        _ = machine.wrote(id(1), lastSequence: 4, wroteBytes: true, pairFull: false, now: t0)
        _ = machine.shutdown(everythingAcknowledged: false, now: at(.seconds(1)))
        #expect(machine.nextDeadline == t0 + heartbeat)
        #expect(machine.deadlinePassed(now: t0 + stall) == [.failStream(id(1), .ackStall, reconnectAfter: nil), .finish])
        #expect(machine.state == .finished)
    }

    @Test func afterFinishingEveryEventIsIgnored() {
        var machine = makeMachine()
        open(&machine, spaceFirst: true)
        _ = machine.shutdown(everythingAcknowledged: true, now: t0)
        #expect(machine.state == .finished)
        #expect(machine.start(now: t0) == [])
        #expect(machine.backoffElapsed(now: t0) == [])
        #expect(machine.responseHead(id(1), status: 500, now: t0) == [])
        #expect(machine.resumeReceived(id(1), collectorHas: 1, now: t0) == [])
        #expect(machine.acknowledged(id(1), through: 1, everythingAcknowledged: true, now: t0) == [])
        #expect(machine.spaceAvailable(id(1), now: t0) == [])
        #expect(machine.dataAvailable(now: t0) == [])
        #expect(machine.wrote(id(1), lastSequence: 1, wroteBytes: true, pairFull: true, now: t0) == [])
        #expect(machine.failed(id(1), .responseEnded, now: t0) == [])
        #expect(machine.deadlinePassed(now: at(.seconds(1000))) == [])
        #expect(machine.shutdown(everythingAcknowledged: false, now: t0) == [])
        #expect(machine.state == .finished)
        #expect(machine.nextDeadline == nil)
    }

    // MARK: StreamFailure

    @Test func onlyClientErrorsAreConfigurationProblems() {
        for code in [400, 401, 403, 404, 499] { #expect(StreamFailure.status(code).isConfigurationProblem) }
        for code in [100, 200, 301, 399, 500, 503, 599] { #expect(!StreamFailure.status(code).isConfigurationProblem) }
        for failure: StreamFailure in [.transport("x"), .responseEnded, .noResume, .ackStall, .writeStall] {
            #expect(!failure.isConfigurationProblem)
        }
    }

    @Test func failuresDescribeThemselves() {
        let failures: [StreamFailure] = [.transport("reset by peer"), .status(503), .responseEnded, .noResume, .ackStall, .writeStall]
        let descriptions = failures.map(\.description)
        #expect(Set(descriptions).count == failures.count)
        #expect(descriptions[0].contains("reset by peer"))
        #expect(descriptions[1].contains("503"))
        #expect(descriptions.allSatisfy { !$0.isEmpty })
    }
}
