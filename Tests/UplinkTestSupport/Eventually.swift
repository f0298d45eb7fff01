import NIOCore

/// Polls `condition` every 10 ms until it holds; returns whether it did. `timeout` only bounds a failing test (a
/// condition that holds returns at once), it measures nothing: generous, since tests run beside hundreds of others
/// and their peer processes on CI's two cores. The number of polls is bounded too.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(60), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    let maximumPolls = Int(timeout / .milliseconds(10)) + 1
    for _ in 0..<maximumPolls {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { break }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Polls `value` (with `eventually`) until it has stayed the same for `quiet` and `accept` holds for it: for a
/// process that is done when its output stops growing. `done` ends the wait sooner, once what it sees is all that
/// was expected. Whether it settled (or was done) before `timeout`.
@discardableResult
public func settles<Value: Equatable>(
    quiet: Duration, timeout: Duration = .seconds(60), accept: (Value) -> Bool = { _ in true },
    done: (Value) async -> Bool = { _ in false }, _ value: () async -> Value
) async -> Bool {
    var last = await value()
    var since = ContinuousClock.now
    return await eventually(timeout: timeout) {
        let now = await value()
        if now != last { (last, since) = (now, ContinuousClock.now) }
        if await done(last) { return true }
        return accept(last) && ContinuousClock.now - since >= quiet
    }
}

/// How long a test waits for one HTTP request to a server on loopback, a peer process or a collector in the test
/// process (`/metrics`, `/v1/status`, `/v1/fleet`, `/healthz`). It only bounds a hang: on CI's two cores, beside
/// hundreds of tests and their processes, answers have been seen to take more than 10 s in the suite's first minute.
public let peerRequestTimeout: TimeAmount = .seconds(30)
