import Synchronization

/// A thread-safe counter for callbacks.
public final class CallCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    public func increment() { _ = count.add(1, ordering: .sequentiallyConsistent) }
    public var value: Int { count.load(ordering: .sequentiallyConsistent) }
}

/// A thread-safe list for values reported by callbacks.
public final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    public init() {}

    public func append(_ value: Value) { values.withLock { $0.append(value) } }
    public var all: [Value] { values.withLock { $0 } }
    public var count: Int { values.withLock { $0.count } }
}

/// A thread-safe boolean that starts false.
public final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    public init() {}

    public func set() { value.store(true, ordering: .sequentiallyConsistent) }
    public var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
