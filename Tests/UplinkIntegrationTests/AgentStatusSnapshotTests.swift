import NIOPosix
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkTransport
import UplinkWire

@testable import UplinkAgent

/// The buffer part of `/v1/status` (which `uplink status` prints) is one snapshot of the ring: a status that counts
/// frames also says how old the oldest one is. Read under two locks, the ring could empty in between and a status
/// showed `frames > 0` without `oldest_unacknowledged_age_seconds`.
// No time limit: the body bounds itself (a second), but as a compute-bound body it may first wait minutes for
// a thread of `DedicatedThreads.compute` while the suite runs.
@Suite("Agent status: the ring in one snapshot")
struct AgentStatusSnapshotTests {
    @Test("frames > 0 always comes with the oldest frame's age while frames come and go", .computeBound)
    func framesComeWithTheirAge() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = Harness.agentNeverRun(id: "status-snapshot", bufferBytes: 64 << 10, on: loops.next())
        let observer = AgentObserver(agent: agent, version: "test")
        let ring = agent.ring
        let source = ring.registerSource("s")
        let encoder = NDJSONFrameEncoder()

        // The writer takes the ring from empty to one frame and back, over and over, until the reader is done. It
        // stays a random few microseconds in each state, outside the ring's lock: an acknowledgement then lands at
        // any point of a status, also between two reads of the ring, instead of queueing behind the reader's lock.
        let stop = Atomic<Bool>(false)
        // On a thread of its own: on the global executor it could wait for the reader's thread the whole time.
        let writer = Task.detached(executorPreference: DedicatedThreads.blocking) {
            var sequence: UInt64 = 0
            var random = SystemRandomNumberGenerator()
            func pause() {
                let until = ContinuousClock.now + .nanoseconds(Int.random(in: 0...4_000, using: &random))
                while ContinuousClock.now < until {}
            }
            while !stop.load(ordering: .relaxed) {
                let record = Record.log("line", source: "s", timestamp: WallClock.nowNanoseconds())
                if case .appended(let stored) = ring.append(encoder.frame(for: record), source: source) { sequence = stored }
                pause()
                ring.readUnsent(maxBytes: 1 << 20) { _, _, _ in }
                ring.acknowledge(through: sequence)
                pause()
            }
        }
        // Bounded in count and in time: 100,000 statuses or 1 second. With the ring read under two locks (the
        // statistics, then the oldest frame) this found torn statuses in every run on a 2-core machine: 80 to 1,400
        // while it was quiet, 1 to 6 at a load average of 11 (it races, so a busier machine finds fewer).
        // On a loaded machine the writer may not run at all within that second, so the reader goes on (up to 60 s)
        // until it has seen the ring both holding frames and empty a hundred times each.
        var withFrames = 0
        var empty = 0
        var inconsistent = 0
        let start = ContinuousClock.now
        var statuses = 0
        func goOn() -> Bool {
            let elapsed = ContinuousClock.now - start
            let raceWindowOpen = statuses < 100_000 && elapsed < .seconds(1)
            let bothStatesSeen = withFrames >= 100 && empty >= 100
            return raceWindowOpen || (!bothStatesSeen && elapsed < .seconds(60))
        }
        while goOn() {
            statuses += 1
            let buffer = observer.status().buffer
            if buffer.frames > 0 {
                withFrames += 1
                if buffer.oldestUnacknowledgedAgeSeconds == nil { inconsistent += 1 }
            } else {
                empty += 1
            }
        }
        stop.store(true, ordering: .relaxed)
        await writer.value
        try await loops.shutdownGracefully()
        #expect(inconsistent == 0, "\(inconsistent) of \(withFrames) statuses with frames had no oldest age")
        #expect(withFrames > 0 && empty > 0, "the ring was seen both holding frames (\(withFrames)) and empty (\(empty))")
    }
}
