import NIOCore

/// Runs Swift tasks' jobs on one NIO event loop, so that a task preferring it (`Task(executorPreference:)`,
/// `withTaskExecutorPreference`) shares the thread of the channels on that loop.
///
/// The agent's send path lives on one loop (the uplink's connection, the tailer's inotify channels). A source task
/// that prefers that loop resumes there: a wake-up from a channel handler on the loop enqueues its job without waking
/// another thread, and what it appends reaches the uplink on the same thread. Jobs enqueued from other threads cost
/// one `EventLoop.execute` (a lock and an eventfd write).
public final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop every job runs on.
    public let loop: any EventLoop

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
