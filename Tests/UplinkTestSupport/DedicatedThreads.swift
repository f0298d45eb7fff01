import Foundation
import Testing

/// Runs a suite's or test's bodies on ``DedicatedThreads/compute`` instead of Swift's global executor: for bodies
/// that compute for seconds without suspending (property tests over many seeds, every cut of a large input, fuzz
/// runs).
///
/// `swift test` runs every test of every target in one process, in parallel, on the global executor. On Linux that
/// executor has one thread per core and runs its jobs in order, each until it suspends, so a job that computes or
/// blocks for seconds holds a thread for seconds. Stack samples of full runs on two cores showed both threads inside
/// compute-bound tests for the first 25–35 s (ring, batch-encoding, compression, splitter, state-machine and fuzz
/// tests, 1–10 CPU-s each in a debug build), then inside `openssl` runs and start-up polls of peer processes. The
/// in-process collectors, agents and timers of every other test waited behind them, and tests that give a peer a few
/// seconds (nginx's 5 s `proxy_read_timeout`, a 1 s connect timeout against a 4 s stall timeout) failed.
///
/// Only for bodies that do not wait for a peer: a test body off the global executor keeps running while the
/// in-process agents and collectors it watches (which stay on the global executor) may not, and a test that measures
/// them ("nothing new for 2 s") then measures the wrong thing. Blocking calls inside a test go through
/// ``DedicatedThreads/run(_:)`` instead, which hands back to the caller's executor once the call returns.
public struct ComputeBound: TestTrait, SuiteTrait, TestScoping {
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(DedicatedThreads.compute) {
            try await function()
        }
    }
}

extension Trait where Self == ComputeBound {
    /// Bodies that compute for seconds without suspending run on ``DedicatedThreads/compute`` (see ``ComputeBound``).
    public static var computeBound: Self { ComputeBound() }
}

/// A task executor that runs each job it is handed on a thread of its own, up to ``maximumThreads`` threads (reused
/// once idle); beyond that, jobs wait in order for a thread. The kernel, not a queue, shares the cores among them,
/// and the global executor's threads stay free for the in-process peers of the tests.
public final class DedicatedThreads: TaskExecutor, @unchecked Sendable {
    /// For compute-bound test bodies: one thread per core, at the lowest priority (nice 19). They wait for nothing,
    /// so they lose nothing by waiting for a core; the in-process peers and the peer processes of the tests that time
    /// things get the cores first. (Stack samples of the suite's first minute on two cores: a quarter of the test
    /// process's CPU was in these bodies while tests with 5 and 10 s deadlines failed for starvation.)
    public static let compute = DedicatedThreads(maximumThreads: ProcessInfo.processInfo.activeProcessorCount, niceness: 19)
    /// For calls that block their thread (``run(_:)``): enough threads that none waits for another.
    public static let blocking = DedicatedThreads(maximumThreads: 64)

    /// The most threads this executor starts.
    public let maximumThreads: Int
    /// The nice value its threads run at (0: the process's own).
    public let niceness: Int32

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [UnownedJob] = []
    private var threads = 0
    private var idleThreads = 0

    private init(maximumThreads: Int, niceness: Int32 = 0) {
        self.maximumThreads = max(1, maximumThreads)
        self.niceness = niceness
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        queue.append(job)
        let startsThread = queue.count > idleThreads && threads < maximumThreads
        if startsThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startsThread {
            Thread { [self] in runJobs() }.start()
        }
    }

    private func runJobs() -> Never {
        let executor = asUnownedTaskExecutor()
        // Linux gives each thread its own nice value; `setpriority` with a thread's id (the last part of
        // /proc/thread-self, `PID/task/TID`) sets that thread's.
        if niceness != 0, let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
            let threadID = link.split(separator: "/").last.flatMap({ id_t($0) })
        {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), threadID, niceness)
        }
        while true {
            condition.lock()
            while queue.isEmpty {
                idleThreads += 1
                condition.wait()
                idleThreads -= 1
            }
            let job = queue.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }

    /// Runs `body`, which blocks its thread (waits for a child process, reads a pipe to its end, polls with `usleep`),
    /// on one of these threads and returns what it returned. The calling task waits without holding a thread of the
    /// global executor.
    public func run<T, Failure: Error>(_ body: () throws(Failure) -> T) async throws(Failure) -> T {
        try await withTaskExecutorPreference(self) { () throws(Failure) -> T in try body() }
    }
}
