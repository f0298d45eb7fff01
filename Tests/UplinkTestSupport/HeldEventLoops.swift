import NIOConcurrencyHelpers
import NIOCore

/// Holds every event loop of a group busy until `release()`: what a collector too busy to read its sockets looks
/// like, made deterministic. Whatever peers send meanwhile waits in the kernel and is read in one go afterwards.
/// Hold a shared group (NIO's singleton) only for a few milliseconds: every other channel on it, of other tests
/// running alongside, pauses too.
public final class HeldEventLoops: Sendable {
    private let gate = ConditionLock(value: false)

    /// Returns once every loop of `group` runs the holding job. (Not through futures of those loops: waiting on one
    /// from outside hops onto its loop, which is held.)
    public init(_ group: any EventLoopGroup) async {
        let (started, starting) = AsyncStream.makeStream(of: Void.self)
        var loops = 0
        for loop in group.makeIterator() {
            loops += 1
            loop.execute { [gate] in
                starting.yield()
                // Not a timed wait: `release()` is in the test's own hands (and `deinit` calls it).
                gate.lock(whenValue: true)
                gate.unlock()
            }
        }
        var running = 0
        for await _ in started {
            running += 1
            if running == loops { break }
        }
    }

    /// Lets every loop go on.
    public func release() {
        gate.lock()
        gate.unlock(withValue: true)
    }

    deinit { release() }
}
