import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkTransport

/// Random event sequences, checking what must hold whatever the order of events.
extension UplinkStateMachineTests {
    @Test(.computeBound, arguments: 1...16 as ClosedRange<UInt64>)
    func randomEventSequencesKeepTheInvariants(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var machine = makeMachine(drainTimeout: .seconds(Int64.random(in: 1...60, using: &random)))
        var now = t0
        var lastConnection = 0
        var visited: [String: Int] = [:]
        let statuses = [200, 200, 200, 200, 500, 503, 404, 401, 301]
        let failures: [StreamFailure] = [.transport("reset"), .responseEnded, .status(502)]

        for step in 0..<3000 {
            let context = "seed \(seed) step \(step) state \(machine.state)"
            // Time only moves forward, sometimes not at all, sometimes far.
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3: break
            case 3..<9: now = now + .milliseconds(Int64.random(in: 1...3000, using: &random))
            default: now = now + .seconds(Int64.random(in: 1...40, using: &random))
            }
            let before = machine
            let current = machine.currentStream?.connection
            // Mostly the current connection, sometimes an old or a future one.
            let connection: Machine.ConnectionID = switch Int.random(in: 0..<10, using: &random) {
            case 0: id(max(1, lastConnection - 1))
            case 1: id(lastConnection + 1)
            default: current ?? id(max(1, lastConnection))
            }
            let sequence = UInt64.random(in: 0...200, using: &random)

            // Half the time the event a healthy stream would see next, so that every phase is visited often.
            let natural = random.next() % 2 == 0
            var roll = Int.random(in: 0..<100, using: &random)
            if natural {
                switch machine.state {
                case .idle: roll = 0
                case .backingOff: roll = 4
                case .finished: break
                case .streaming(let stream), .draining(let stream, _):
                    switch stream.phase {
                    case .awaitingResponse: roll = 12
                    case .awaitingResume: roll = 22
                    case .flowing: roll = [32, 44, 54, 60, 60, 78].randomElement(using: &random)!
                    }
                }
            }
            let actions: [Action]
            var usesConnection = true
            switch roll {
            case 0..<4:
                usesConnection = false
                actions = machine.start(now: now)
            case 4..<12:
                usesConnection = false
                actions = machine.backoffElapsed(now: now)
            case 12..<22:
                let status = natural ? 200 : statuses.randomElement(using: &random)!
                actions = machine.responseHead(connection, status: status, now: now)
            case 22..<32: actions = machine.resumeReceived(connection, collectorHas: sequence, now: now)
            case 32..<44:
                actions = machine.acknowledged(
                    connection, through: sequence, everythingAcknowledged: random.next() % 4 == 0, now: now)
            case 44..<54: actions = machine.spaceAvailable(connection, now: now)
            case 54..<60:
                usesConnection = false
                actions = machine.dataAvailable(now: now)
            case 60..<74:
                actions = machine.wrote(
                    connection, lastSequence: random.next() % 3 == 0 ? nil : sequence,
                    wroteBytes: random.next() % 4 != 0, pairFull: random.next() % 3 == 0, now: now)
            case 74..<78: actions = machine.failed(connection, failures.randomElement(using: &random)!, now: now)
            case 78..<99:
                usesConnection = false
                // The owner's timer: usually at the deadline, sometimes early.
                if let deadline = machine.nextDeadline, random.next() % 4 != 0, deadline > now { now = deadline }
                let due = machine.nextDeadline.map { now >= $0 } ?? false
                actions = machine.deadlinePassed(now: now)
                if due {
                    #expect(!actions.isEmpty, "a due deadline must do something, or the owner's timer spins; \(context)")
                } else {
                    #expect(actions.isEmpty, "nothing is due before the next deadline; \(context)")
                }
            default:
                // Shutdown ends the run, so only near its end.
                usesConnection = false
                actions = step > 2700
                    ? machine.shutdown(everythingAcknowledged: random.next() % 3 == 0, now: now)
                    : machine.dataAvailable(now: now)
            }
            switch machine.state {
            case .idle: visited["idle", default: 0] += 1
            case .backingOff: visited["backingOff", default: 0] += 1
            case .finished: visited["finished", default: 0] += 1
            case .draining: visited["draining", default: 0] += 1
            case .streaming(let stream): visited["\(stream.phase)", default: 0] += 1
            }

            // Events for other connections change nothing.
            if usesConnection && connection != current {
                #expect(actions.isEmpty, "\(context)")
                #expect(machine.state == before.state, "\(context)")
                #expect(machine.failedAttempts == before.failedAttempts, "\(context)")
            }
            check(actions, before: before, after: machine, lastConnection: &lastConnection, context: context)
            if case .finished = machine.state { break }
        }

        // Whatever state it ended in, a shutdown finishes within the drain timeout.
        var actions = machine.shutdown(everythingAcknowledged: false, now: now)
        if case .draining(_, let deadline) = machine.state {
            now = max(now, deadline)
            actions = machine.deadlinePassed(now: now)
        }
        #expect(machine.state == .finished, "seed \(seed)")
        #expect(actions.last == .finish || actions.isEmpty, "seed \(seed)")
        #expect(machine.nextDeadline == nil)
        for state in ["backingOff", "awaitingResponse", "awaitingResume", "flowing"] {
            #expect(visited[state, default: 0] >= 50, "seed \(seed) visited \(visited)")
        }
    }

    /// What every transition must satisfy.
    private func check(
        _ actions: [Action], before: Machine, after: Machine, lastConnection: inout Int, context: String
    ) {
        let wasDraining = if case .draining = before.state { true } else { false }
        for (index, action) in actions.enumerated() {
            switch action {
            case .connect(let connection):
                #expect(connection.rawValue == lastConnection + 1, "connections are numbered in order; \(context)")
                lastConnection = connection.rawValue
                #expect(after.currentStream?.connection == connection, "\(context)")
                #expect(after.currentStream?.phase == .awaitingResponse, "\(context)")
                #expect(actions.count == 1, "\(context)")
            case .resume:
                #expect(index == 0, "\(context)")
                #expect(before.currentStream?.phase == .awaitingResume, "\(context)")
                #expect(after.currentStream?.phase == .flowing, "\(context)")
            case .write:
                #expect(after.currentStream?.phase == .flowing, "\(context)")
                #expect(after.currentStream?.canWrite == true, "writes only while a space signal is held; \(context)")
            case .sendHeartbeat:
                #expect(after.currentStream?.canWrite == true, "\(context)")
                #expect(actions.count == 1, "\(context)")
            case .failStream(let connection, _, let delay):
                #expect(connection == before.currentStream?.connection, "only the current stream fails; \(context)")
                if wasDraining {
                    #expect(delay == nil, "no reconnect during a drain; \(context)")
                    #expect(actions == [action, .finish], "\(context)")
                } else {
                    #expect(delay != nil, "\(context)")
                    #expect(delay.map { $0 >= .zero && $0 <= backoff.maximum } ?? false, "\(context)")
                    #expect(after.failedAttempts >= 1, "\(context)")
                    if case .backingOff = after.state {} else { Issue.record("failStream must back off; \(context)") }
                }
            case .endStream(let connection):
                #expect(connection == before.currentStream?.connection, "\(context)")
                #expect(actions.last == .finish, "\(context)")
            case .finish:
                #expect(index == actions.count - 1, "\(context)")
                #expect(after.state == .finished, "\(context)")
            }
        }
        if case .finished = before.state {
            #expect(actions.isEmpty, "nothing happens after finishing; \(context)")
        }
        // Only a drain or an open stream has deadlines; a stream always has one before it flows.
        switch after.state {
        case .idle, .backingOff, .finished:
            #expect(after.nextDeadline == nil, "\(context)")
        case .streaming(let stream), .draining(let stream, _):
            if stream.phase != .flowing { #expect(after.nextDeadline != nil, "\(context)") }
            if case .draining = after.state { #expect(after.nextDeadline != nil, "\(context)") }
            #expect(stream.connection.rawValue == lastConnection, "\(context)")
        }
    }
}
