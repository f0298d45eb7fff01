/// Runs the test bodies that load every core (SIGKILL loops, twenty agents at once, descriptor floods) and those whose
/// assertions depend on timely scheduling (deadlines of a few seconds, stall detection) one at a time.
///
/// `swift test` runs all suites of all test targets in one process, in parallel. On CI's two cores, the heavy tests
/// together pushed the load past 30, and a test measuring a 2-second deadline then failed for starvation, not for a
/// bug. Light tests still run alongside. Suites that use the gate leave room in their time limits for the wait.
public enum CPUGate {
    private actor Gate {
        private var busy = false
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard busy else {
                busy = true
                return
            }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            if waiters.isEmpty {
                busy = false
            } else {
                waiters.removeFirst().resume()
            }
        }
    }

    private static let gate = Gate()

    /// Runs `body` once no other gated body runs.
    public static func exclusive<T>(_ body: () async throws -> T) async throws -> T {
        await gate.acquire()
        do {
            let result = try await body()
            await gate.release()
            return result
        } catch {
            await gate.release()
            throw error
        }
    }
}
