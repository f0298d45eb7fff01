import NIOPosix

/// File work that may sleep in the kernel (an `fsync` takes tens to hundreds of milliseconds on an SD card) and must
/// happen even when its task is being stopped: a checkpoint, a forwarder's cursor, a remote configuration's state.
///
/// It runs on NIO's blocking-I/O thread pool, so it does not hold a thread of the executor the caller shares with
/// others; when the pool refuses it, here on the caller's thread instead. The pool refuses work when it is not
/// running (the process is shutting down) and, through its async `runIfActive`, work whose task was cancelled before
/// the work began. Work that may be dropped on cancellation (a read for the next batch) calls the pool directly.
public enum BlockingFileWork {
    /// `body`'s result, computed on the pool or, when the pool refuses, here. `body`'s own error is thrown as it is.
    public static func run<Value: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure>
        do {
            result = try await NIOThreadPool.singleton.runIfActive { () -> Result<Value, Failure> in
                do throws(Failure) {
                    return .success(try body())
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            // Refused (the body's own failure is inside the result): do it here.
            do throws(Failure) {
                result = .success(try body())
            } catch let failure {
                result = .failure(failure)
            }
        }
        return try result.get()
    }
}
