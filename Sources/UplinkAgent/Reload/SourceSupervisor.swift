import ServiceLifecycle
import Synchronization
import UplinkCore

/// Runs the agent's sources, each in its own child task, and starts or stops single sources while the others keep
/// running (a reload).
///
/// Every source runs inside `run()`, so it inherits the service group's graceful shutdown: on shutdown all sources
/// stop and `run()` returns once the last one has. A source that ends or fails ends only itself.
final class SourceSupervisor: Service, Sendable {
    private struct State {
        /// The sources started and not stopped, in start order.
        var running: [RunningSource] = []
        /// `run()` has returned: nothing starts any more.
        var ended = false
    }

    private let state = Mutex(State())
    private let starts: AsyncStream<RunningSource>
    private let startContinuation: AsyncStream<RunningSource>.Continuation
    private let shutdownBegins: @Sendable () -> Void

    /// `shutdownBegins` runs once when graceful shutdown begins, before the sources stop.
    init(shutdownBegins: @escaping @Sendable () -> Void = {}) {
        (starts, startContinuation) = AsyncStream.makeStream(of: RunningSource.self)
        self.shutdownBegins = shutdownBegins
    }

    /// The services of the sources started and not stopped, in start order.
    var services: [SourceService] {
        state.withLock { $0.running.map(\.service) }
    }

    /// The names of the sources started and not stopped, in start order.
    var names: [String] {
        state.withLock { $0.running.map(\.name) }
    }

    /// Every source started and not stopped, with its kind (`sources[].type`), whether its task has begun,
    /// whether it has ended (returned or failed) and what it reports about its health, in start order.
    var sourceStates: [(name: String, kind: String, started: Bool, ended: Bool, health: SourceHealth.Snapshot)] {
        state.withLock { $0.running }.map {
            ($0.name, $0.kind, $0.hasStarted, $0.hasEnded, $0.service.context.health.snapshot)
        }
    }

    /// Starts `service` under `name` (at once when `run()` is running, else when it starts); `kind` is its
    /// `sources[].type`, for the status.
    func start(_ name: String, kind: String, _ service: SourceService) {
        let source = RunningSource(name: name, kind: kind, service: service)
        let ended = state.withLock { state in
            if !state.ended { state.running.append(source) }
            return state.ended
        }
        if ended { source.markFinished() } else { startContinuation.yield(source) }
    }

    /// Stops the source named `name` and returns once it has returned (so a source restarted under the same name
    /// never runs twice at once: a tailer has written its checkpoint by then). Does nothing for an unknown name.
    func stop(_ name: String) async {
        let source = state.withLock { state -> RunningSource? in
            guard let index = state.running.firstIndex(where: { $0.name == name }) else { return nil }
            return state.running.remove(at: index)
        }
        guard let source else { return }
        source.requestStop()
        await source.finished()
    }

    func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown { [starts] in
                await withTaskGroup(of: Void.self) { group in
                    for await source in starts {
                        group.addTask { await source.run() }
                    }
                }
            }
        } onGracefulShutdown: { [shutdownBegins] in
            shutdownBegins()
        }
        let leftOver = state.withLock { state in
            state.ended = true
            return state.running
        }
        startContinuation.finish()
        // Sources queued but never started (shutdown came first) count as finished, so `stop` never waits forever.
        for source in leftOver { source.markFinished() }
    }
}

/// One source under the supervisor: runs until it returns, is stopped, or its task is cancelled.
final class RunningSource: Sendable {
    let name: String
    let kind: String
    let service: SourceService
    private let stopRequested = AsyncLatch<Void>()
    private let completion = AsyncLatch<Void>()

    init(name: String, kind: String, service: SourceService) {
        self.name = name
        self.kind = kind
        self.service = service
    }

    /// The source's task has begun.
    var hasStarted: Bool { started.load(ordering: .relaxed) }

    /// The source has returned (ended, failed or stopped).
    var hasEnded: Bool { completion.value != nil }

    private let started = Atomic(false)

    func run() async {
        started.store(true, ordering: .relaxed)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [service] in try? await service.run() }
            group.addTask { [stopRequested] in _ = try? await stopRequested.waitUnlessCancelled() }
            await group.next()
            group.cancelAll()
        }
        markFinished()
    }

    func requestStop() {
        stopRequested.open(with: ())
    }

    func markFinished() {
        completion.open(with: ())
    }

    /// Returns once the source has returned.
    func finished() async {
        await completion.wait()
    }
}
