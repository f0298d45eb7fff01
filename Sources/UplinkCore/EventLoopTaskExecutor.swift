import NIOCore

/// Runs Swift tasks' jobs on one NIO event loop, so that a task preferring it (`withTaskExecutorPreference`) shares
/// the thread of the channels on that loop.
///
/// The collector serves each stream on its connection's loop this way: a body part the channel reads resumes the
/// stream's task without waking another thread, and the acknowledgement it writes goes out on the same thread.
/// Jobs enqueued from other threads (a storage commit finishing) cost one `EventLoop.execute`: a lock and an eventfd
/// write.
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
