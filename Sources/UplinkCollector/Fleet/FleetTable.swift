import Synchronization
import UplinkWire

/// What one received chunk of an agent's body brought, for the fleet table: counted outside the table's lock,
/// added under it in one step.
struct FleetBatch: Sendable, Equatable {
    var stored: UInt64 = 0
    var duplicates: UInt64 = 0
    var resent: UInt64 = 0
    var missing: UInt64 = 0
    var rejected: UInt64 = 0
    /// The `ts` of the last record stored from the batch.
    var newestRecordTime: Int64?

    init(stored: UInt64 = 0, duplicates: UInt64 = 0, resent: UInt64 = 0, missing: UInt64 = 0, rejected: UInt64 = 0,
         newestRecordTime: Int64? = nil) {
        self.stored = stored
        self.duplicates = duplicates
        self.resent = resent
        self.missing = missing
        self.rejected = rejected
        self.newestRecordTime = newestRecordTime
    }

    /// The discards, gaps and rejects of `batch`; nothing stored yet (see `stored(_:)`).
    init(_ batch: ReceivedBatch) {
        duplicates = batch.duplicates
        resent = batch.resent
        missing = batch.missing
        rejected = batch.malformed
        rejected.addSaturating(batch.tooLong)
    }

    /// Notes that `count` records were stored, the last of them with `ts` `newestRecordTime` (as the stream's
    /// processor read it: `ReceivedBatch.newestRecordTime`).
    mutating func stored(count: Int, newestRecordTime: Int64?) {
        stored.addSaturating(UInt64(count))
        if let newestRecordTime { self.newestRecordTime = newestRecordTime }
    }
}

/// The collector's per-agent activity (`Collector.fleet()`): one entry per agent id, updated once per stream
/// opened or closed, once per received chunk (never per line) and once per remote configuration request (an agent
/// without a stream appears through those), so the lock is held for a few dictionary operations at a time.
///
/// The table is bounded against peers that invent agent ids: beyond `capacity` agents, the disconnected agent seen
/// least recently is evicted (and counted) to make room. An agent with an open stream is never evicted, so the
/// table exceeds `capacity` only while more agents than that stream at once (`collector.max_streams` bounds them).
/// Finding the one to evict is a scan of the table, done only when a new agent arrives at a full table.
///
/// Times are passed in by the caller (wall clock in ns since the Unix epoch; `second`, whole seconds of a
/// monotonic clock for the per-second history) so that they are read outside the lock and tests can choose them.
final class FleetTable: Sendable {
    /// Agents kept by default.
    static let defaultCapacity = 4096
    /// Complete seconds of per-second record counts each agent keeps.
    static let historySeconds = 60
    /// Longest TLS identity kept, in UTF-8 bytes; a longer subject is cut at a character boundary and ends in `…`.
    static let maximumIdentityBytes = 1024

    let capacity: Int
    private let origin = ContinuousClock.now

    private struct Entry {
        /// The agent's values; `connected`, `connectedSince` and `recordsPerSecond` are filled in by `snapshot`.
        var activity: AgentActivity
        var openStreams = 0
        /// When the entry was last touched, as a counter: orders agents for eviction without trusting a clock.
        var touched: UInt64 = 0
        var connectedSince: Int64?
        var history = SecondCounts()
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var generation: UInt64 = 0
        var evicted: UInt64 = 0

        /// The entry of `agent`, created (evicting if the table is full) when there is none. Changed in place,
        /// after one lookup of the key: this runs once per received chunk, which at a few lines a second per agent
        /// is once per line.
        mutating func touch(_ agent: String, wall: Int64, capacity: Int, _ body: (inout Entry) -> Void) {
            generation += 1
            let touched = generation
            if entries.count >= capacity && entries.index(forKey: agent) == nil { evictOne() }
            func update(_ entry: inout Entry) {
                entry.touched = touched
                entry.activity.lastSeen = wall
                body(&entry)
            }
            update(&entries[agent, default: Entry(activity: AgentActivity(agent: agent, lastSeen: wall))])
        }

        /// Removes the disconnected agent touched least recently, if there is one.
        private mutating func evictOne() {
            var victim: String?
            var oldest = UInt64.max
            for (agent, entry) in entries where entry.openStreams == 0 && entry.touched < oldest {
                victim = agent
                oldest = entry.touched
            }
            guard let victim else { return }
            entries[victim] = nil
            evicted.addSaturating(1)
        }
    }

    private let state = Mutex(State())

    /// A table keeping about `capacity` agents (at least 1).
    init(capacity: Int = FleetTable.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Whole seconds of the monotonic clock since the table was created: the `second` of the other methods.
    func currentSecond() -> Int64 {
        (ContinuousClock.now - origin).components.seconds
    }

    /// A stream of `stream.agent` opened (accepted with `200`).
    func opened(_ stream: OpenStream, wall: Int64) {
        let identity = stream.certificateSubject.map(Self.bounded)
        let peer = Self.address(stream.peer)
        state.withLock { state in
            state.touch(stream.agent, wall: wall, capacity: capacity) { entry in
                entry.openStreams += 1
                entry.connectedSince = wall
                entry.activity.streamsOpened.addSaturating(1)
                entry.activity.epoch = stream.epoch
                entry.activity.tlsIdentity = identity
                entry.activity.httpVersion = stream.httpVersion
                entry.activity.peer = peer
            }
        }
    }

    /// A stream of `agent` ended (however it ended).
    func closed(agent: String, wall: Int64) {
        state.withLock { state in
            state.touch(agent, wall: wall, capacity: capacity) { entry in
                entry.openStreams = max(0, entry.openStreams - 1)
                if entry.openStreams == 0 { entry.connectedSince = nil }
            }
        }
    }

    /// `agent` made a request other than a stream (a remote configuration request: the manifest, a blob, its
    /// status): it is in the table from then on, with `lastSeen` now, even if it never streams.
    func heard(agent: String, wall: Int64) {
        state.withLock { state in
            state.touch(agent, wall: wall, capacity: capacity) { _ in }
        }
    }

    /// A chunk of `agent`'s body was handled: what it held, and what of it was stored.
    func received(agent: String, _ batch: FleetBatch, wall: Int64, second: Int64) {
        state.withLock { state in
            state.touch(agent, wall: wall, capacity: capacity) { entry in
                entry.activity.recordsStored.addSaturating(batch.stored)
                entry.activity.duplicatesDiscarded.addSaturating(batch.duplicates)
                entry.activity.resentDiscarded.addSaturating(batch.resent)
                entry.activity.recordsMissing.addSaturating(batch.missing)
                entry.activity.rejectedLines.addSaturating(batch.rejected)
                if let time = batch.newestRecordTime { entry.activity.newestRecordTime = time }
                entry.history.add(batch.stored, at: second)
            }
        }
    }

    /// Every agent, sorted by id; `now` is the wall clock to report, `second` the monotonic second in progress.
    func snapshot(now: Int64, second: Int64) -> FleetSnapshot {
        let (entries, evicted) = state.withLock { state in (Array(state.entries.values), state.evicted) }
        var agents = entries.map { entry -> AgentActivity in
            var activity = entry.activity
            activity.connected = entry.openStreams > 0
            activity.connectedSince = entry.connectedSince
            activity.recordsPerSecond = entry.history.complete(Self.historySeconds, before: second)
            return activity
        }
        agents.sort { $0.agent < $1.agent }
        return FleetSnapshot(now: now, capacity: capacity, agentsEvicted: evicted, agents: agents)
    }

    /// A peer as `OpenStream.peer` describes it (`[IPv4]host/192.0.2.7:51234`), as an address alone
    /// (`192.0.2.7:51234`, `[2001:db8::7]:51234`); other descriptions unchanged.
    static func address(_ peer: String) -> String {
        for (prefix, isIPv6) in [("[IPv4]", false), ("[IPv6]", true)] where peer.hasPrefix(prefix) {
            guard let slash = peer.firstIndex(of: "/") else { return peer }
            let address = peer[peer.index(after: slash)...]
            guard isIPv6, let colon = address.lastIndex(of: ":") else { return String(address) }
            return "[" + address[..<colon] + "]" + address[colon...]
        }
        return peer
    }

    /// `subject` cut to at most `maximumIdentityBytes` UTF-8 bytes at a scalar boundary.
    static func bounded(_ subject: String) -> String {
        guard subject.utf8.count > maximumIdentityBytes else { return subject }
        let ellipsis = "…"
        var bytes = ellipsis.utf8.count
        var kept = String.UnicodeScalarView()
        for scalar in subject.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maximumIdentityBytes { break }
            kept.append(scalar)
        }
        return String(kept) + ellipsis
    }
}

/// Records stored per second over the last 64 seconds of a monotonic clock: a ring indexed by the second, cleared
/// as time moves on. Memory is allocated with the first count.
struct SecondCounts: Sendable {
    private static let slots: Int64 = 64
    private var counts: [UInt32] = []
    /// The second the newest slot belongs to.
    private var newest: Int64 = 0

    /// Adds `count` records to `second` (ignored if it is more than 63 seconds older than the newest second seen).
    mutating func add(_ count: UInt64, at second: Int64) {
        guard count > 0, second >= 0 else { return }
        if counts.isEmpty {
            counts = Array(repeating: 0, count: Int(Self.slots))
            newest = second
        }
        if second > newest {
            let cleared = min(second - newest, Self.slots)
            for step in 1...cleared { counts[Int((newest + step) % Self.slots)] = 0 }
            newest = second
        } else if newest - second >= Self.slots {
            return
        }
        let index = Int(second % Self.slots)
        let (sum, overflow) = UInt64(counts[index]).addingReportingOverflow(count)
        counts[index] = overflow ? .max : UInt32(clamping: sum)
    }

    /// The counts of the `length` seconds before `current`, oldest first; 0 for seconds not kept.
    func complete(_ length: Int, before current: Int64) -> [UInt32] {
        (0..<Int64(length)).map { back in
            let second = current - Int64(length) + back
            guard !counts.isEmpty, second >= 0, second <= newest, newest - second < Self.slots else { return 0 }
            return counts[Int(second % Self.slots)]
        }
    }
}
