import Testing

@testable import UplinkSources

/// `CheckpointSchedule` on its own: when a log source's checkpoint write is due.
@Suite("Checkpoint schedule")
struct CheckpointScheduleTests {
    static let start = ContinuousClock.now
    static let interval: Duration = .seconds(1)

    @Test("nothing changed: nothing is due, and the source looks only while lines await acknowledgement")
    func nothingChanged() {
        let schedule = CheckpointSchedule(interval: Self.interval, now: Self.start)
        #expect(!schedule.isDirty && schedule.due == nil && !schedule.isDue(now: Self.start.advanced(by: .seconds(3600))))
        #expect(schedule.nextLook(now: Self.start, awaitingAcknowledgement: false) == nil)
        let later = Self.start.advanced(by: .seconds(7))
        #expect(schedule.nextLook(now: later, awaitingAcknowledgement: true) == later.advanced(by: Self.interval))
    }

    @Test("a look that is due already is now, never before it; a write takes everything and restarts the interval")
    func overdueAndWriting() {
        var schedule = CheckpointSchedule(interval: Self.interval, now: Self.start)
        schedule.markChanged()
        let late = Self.start.advanced(by: .seconds(10))
        #expect(schedule.isDue(now: late))
        #expect(schedule.nextLook(now: late, awaitingAcknowledgement: true) == late)
        schedule.writing(at: late)
        #expect(!schedule.isDirty && schedule.due == nil)
        schedule.acknowledged(bytes: 0)
        #expect(!schedule.isDirty)
        schedule.acknowledged(bytes: 1)
        #expect(schedule.due == late.advanced(by: Self.interval * CheckpointSchedule.trickleIntervals))
    }

    @Test("acknowledged bytes add up without overflowing")
    func saturates() {
        var schedule = CheckpointSchedule(interval: Self.interval, now: Self.start)
        schedule.acknowledged(bytes: .max)
        schedule.acknowledged(bytes: .max)
        #expect(schedule.due == Self.start.advanced(by: Self.interval))
    }
}
