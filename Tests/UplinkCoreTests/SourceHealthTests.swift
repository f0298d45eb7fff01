import Testing
import UplinkCore

@Suite("Source health")
struct SourceHealthTests {
    @Test("the last report wins; failures are counted; a reason goes with idle and failing only")
    func transitions() {
        let health = SourceHealth()
        #expect(health.snapshot == SourceHealth.Snapshot(state: .starting))
        health.succeeded()
        #expect(health.snapshot == SourceHealth.Snapshot(state: .healthy))
        health.failed("exit status 127")
        health.failed("exit status 127")
        #expect(health.snapshot == SourceHealth.Snapshot(state: .failing, reason: "exit status 127", failures: 2))
        health.succeeded()
        #expect(health.snapshot == SourceHealth.Snapshot(state: .healthy, failures: 2))
        health.idle("no file matches /var/log/app/*.log")
        #expect(health.snapshot.state == .idle)
        health.succeeded()
        #expect(health.snapshot.state == .healthy, "healthy again after idle: the fast path must not skip the change")
    }

    @Test("reports from many tasks at once end in a consistent snapshot")
    func concurrent() async {
        let health = SourceHealth()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<2_000 {
                        if (task + round) % 3 == 0 { health.failed("f") } else { health.succeeded() }
                    }
                }
            }
        }
        let snapshot = health.snapshot
        #expect(snapshot.failures == (0..<8).reduce(0) { total, task in total + (0..<2_000).filter { (task + $0) % 3 == 0 }.count })
        #expect(snapshot.state == .healthy ? snapshot.reason == nil : snapshot.reason == "f")
    }
}
