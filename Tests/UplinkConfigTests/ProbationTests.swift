import Synchronization
import Testing
import UplinkAgent
import UplinkCore
import UplinkTestSupport

/// `Probation`: the criteria a remote configuration must meet before it becomes the last-known-good.
@Suite("Remote configuration probation")
struct ProbationTests {
    let clock = ManualClock()

    func probation(watching names: [String] = ["modbus"], dropsAtSwap: Int = 0, uptime: Duration = .seconds(600)) -> Probation {
        Probation(
            watched: names, window: .seconds(60), swapSequence: 100, localDropsAtSwap: dropsAtSwap, uptime: uptime,
            started: clock.now)
    }

    func reading(
        _ state: SourceHealth.State = .healthy, reason: String? = nil, ended: Bool = false, drops: Int = 0,
        streaming: Bool = true, acknowledged: UInt64 = 150, lastAppended: UInt64 = 160
    ) -> Probation.Reading {
        Probation.Reading(
            sources: ["modbus": .init(ended: ended, health: .init(state: state, reason: reason))], localDrops: drops,
            streaming: streaming, acknowledged: acknowledged, lastAppended: lastAppended)
    }

    @Test("a healthy source and an acknowledgement after the swap pass, but only once the window is over")
    func passes() {
        let trial = probation()
        #expect(trial.check(reading(), at: clock.now) == .pending)
        clock.advance(by: .seconds(59))
        #expect(trial.check(reading(), at: clock.now) == .pending)
        clock.advance(by: .seconds(1))
        #expect(trial.check(reading(), at: clock.now) == .passed(skipped: []))
        #expect(trial.check(reading(.idle, reason: "no file matches"), at: clock.now) == .passed(skipped: []),
            "legitimately idle passes")
    }

    @Test("a source that ended fails at once; one failing or silent at the end fails with its reason")
    func sourceCriteria() {
        let trial = probation()
        #expect(trial.check(reading(.failing, reason: "exit status 127", ended: true), at: clock.now)
            == .failed("source modbus ended: exit status 127"))
        #expect(trial.check(reading(.failing, reason: "exit status 127"), at: clock.now) == .pending,
            "a failing sample may still recover within the window")
        clock.advance(by: .seconds(60))
        #expect(trial.check(reading(.failing, reason: "exit status 127"), at: clock.now)
            == .failed("source modbus is failing: exit status 127"))
        #expect(trial.check(reading(.starting), at: clock.now) == .failed("source modbus reported nothing within 60.0 seconds"))
        #expect(trial.check(Probation.Reading(sources: [:], localDrops: 0, streaming: true, acknowledged: 0, lastAppended: 0), at: clock.now)
            == .failed("source modbus is not running"))
    }

    @Test("local drops: none tolerated for sources that never dropped, their usual rate for those that did")
    func localDrops() {
        #expect(probation().check(reading(drops: 1), at: clock.now)
            == .failed("local sources dropped 1 records during probation (tolerated: 0)"))
        // 100 drops in 600 s before: 10 per 60 s window are tolerated.
        let busy = probation(dropsAtSwap: 100)
        #expect(busy.check(reading(drops: 110), at: clock.now) == .pending)
        #expect(busy.check(reading(drops: 111), at: clock.now) != .pending)
    }

    @Test("the acknowledgement criterion is skipped, not failed, when the collector is unreachable")
    func acknowledgement() {
        let trial = probation()
        clock.advance(by: .seconds(60))
        #expect(trial.check(reading(streaming: false, acknowledged: 90), at: clock.now)
            == .passed(skipped: ["acknowledgement (the stream is down)"]))
        #expect(trial.check(reading(streaming: true, acknowledged: 100), at: clock.now)
            == .failed("the collector acknowledged nothing appended after the swap (stream up, acknowledged 100, swap at 100)"))
        #expect(trial.check(reading(acknowledged: 100, lastAppended: 100), at: clock.now)
            == .passed(skipped: ["acknowledgement (nothing was appended after the swap)"]))
    }

    @Test("run takes readings on the clock until the verdict")
    func runsOnTheClock() async {
        let trial = probation()
        let readings = CallCounter()
        let verdict = Task { [clock] in
            await trial.run(clock: clock) {
                readings.increment()
                return reading()
            }
        }
        for _ in 0..<60 {
            await eventually { clock.sleepers == 1 }
            clock.advance(by: .seconds(1))
        }
        #expect(await verdict.value == .passed(skipped: []))
        #expect(readings.value == 61)
    }

    @Test("run ends with interrupted at the first reading after interrupted says so, long before the window is over")
    func interrupted() async {
        let trial = probation()
        let readings = CallCounter()
        let stop = CallCounter()
        let verdict = Task { [clock] in
            await trial.run(clock: clock, interrupted: { stop.value > 0 }) {
                readings.increment()
                return reading()
            }
        }
        for _ in 0..<3 {
            await eventually { clock.sleepers == 1 }
            clock.advance(by: .seconds(1))
        }
        await eventually { clock.sleepers == 1 }
        stop.increment()
        clock.advance(by: .seconds(1))
        #expect(await verdict.value == .interrupted)
        #expect(readings.value == 4)
    }
}
