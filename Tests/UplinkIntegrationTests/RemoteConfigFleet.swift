import AsyncHTTPClient
import Foundation
import Synchronization
import NIOCore
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// The files and processes of one fleet of one box for remote configuration tests: keys made with `uplink config
/// keygen`, a collector process serving `fleet/`, an agent process with a `local-load` source and `remote_config` on.
final class RemoteConfigFleet: @unchecked Sendable {
    let root: String
    let collectorPort: Int
    let agentPort: Int
    var collector: SpawnedProcess?
    var agent: SpawnedProcess?
    var collectorLog: CapturedOutput?
    var agentLog: CapturedOutput?
    let client = HTTPClient(eventLoopGroupProvider: .singleton)

    /// - Parameters:
    ///   - probation: `remote_config.probation`.
    ///   - collectorRequiresSignature: `collector.remote_config.require_signature`.
    ///   - localSources: More local sources (flow-style YAML items) after `local-load`, given the fleet's root.
    init(
        probation: String = "3s", collectorRequiresSignature: Bool = true,
        localSources: (_ root: String) -> [String] = { _ in [] }
    ) async throws {
        root = try Harness.temporaryDirectory("remote-e2e")
        collectorPort = try FreePort.pick()
        agentPort = try FreePort.pick()
        for directory in ["fleet/documents", "logs", "keys"] {
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        let keygen = try await UplinkBinary.run(["config", "keygen", "--out", root + "/keys/ops"])
        precondition(keygen.status == 0, keygen.standardError)
        try write(collectorConfiguration(requiresSignature: collectorRequiresSignature), to: "collector.yaml")
        try write("""
            agent: { id: box-1, state_dir: \(root)/state, metrics_listen: "127.0.0.1:\(agentPort)" }
            uplink: { url: "http://127.0.0.1:\(collectorPort)" }
            sources:
              - { name: local-load, type: load, interval: 1s }
            \(localSources(root).map { "  - \($0)\n" }.joined())remote_config:
              enabled: true
              probation: \(probation)
              trusted_keys: [\(root)/keys/ops.pub]
              labels: { site: lab }
              allow:
                source_types: [tail, exec]
                tail_paths: ["\(root)/logs/**"]
                exec:
                  - argv: [\(root)/missing-probe, "*"]
            """, to: "agent.yaml")
    }

    /// `collector.yaml`: the fleet's collector serving `fleet/`, with `remoteConfig` lines (YAML, one key each) added
    /// to its `remote_config`.
    func collectorConfiguration(requiresSignature: Bool = true, remoteConfig: [String] = []) -> String {
        """
        collector:
          listen: 127.0.0.1:\(collectorPort)
          data_dir: \(root)/data
          stdout: false
          remote_config:
            dir: \(root)/fleet
            require_signature: \(requiresSignature)
            trusted_keys: [\(root)/keys/ops.pub]
        \(remoteConfig.map { "    " + $0 + "\n" }.joined())
        """
    }

    /// Gives the collector its agents' labels from `fleet/inventory.yaml`, written with `inventory`.
    func labelAgents(fromInventory inventory: String) throws {
        try write(collectorConfiguration(remoteConfig: ["labels_from: [inventory]"]), to: "collector.yaml")
        try write(inventory, to: "fleet/inventory.yaml")
    }

    /// A document's text with one `tail` source `source` on `logs/<file>`, read from its beginning.
    func tailDocument(source: String, file: String) -> String {
        "sources:\n  - { name: \(source), type: tail, paths: [\"\(root)/logs/\(file)\"], start_at: beginning }"
    }

    func write(_ text: String, to path: String) throws {
        try (text + "\n").write(toFile: root + "/" + path, atomically: true, encoding: .utf8)
    }

    /// Writes `documents/<name>.yaml` and signs it with `uplink config sign` (with `key`, by default the trusted one).
    func document(_ name: String, serial: Int, key: String = "ops", _ text: String) async throws {
        try write(text, to: "fleet/documents/\(name).yaml")
        let sign = try await UplinkBinary.run([
            "config", "sign", "--key", root + "/keys/\(key).key", "--serial", "\(serial)", "--audience", "labels.site=lab",
            "--expires", "30d", root + "/fleet/documents/\(name).yaml",
        ])
        precondition(sign.status == 0, sign.standardError)
    }

    func assign(generation: Int, _ documents: [String]) throws {
        try write("generation: \(generation)\nassign:\n  - {name: lab, match: {agents: [\"box-*\"]}, documents: [\(documents.joined(separator: ", "))]}", to: "fleet/assignments.yaml")
    }

    /// The usual beginning: `logs/app.log` holding `line-1`, the document `logs` (serial 1) that tails it assigned at
    /// generation 1, then the collector and the agent started.
    func startWithAppLog() async throws {
        try "line-1\n".write(toFile: root + "/logs/app.log", atomically: true, encoding: .utf8)
        try await document("logs", serial: 1, tailDocument(source: "app", file: "app.log"))
        try assign(generation: 1, ["logs"])
        try startCollector()
        try startAgent()
    }

    func start(_ arguments: [String]) throws -> (SpawnedProcess, CapturedOutput) {
        try UplinkBinary.start(arguments, capturing: .both)
    }

    func startCollector() throws {
        (collector, collectorLog) = try start(["collector", "--config", root + "/collector.yaml"])
    }

    func startAgent() throws {
        (agent, agentLog) = try start(["run", "--config", root + "/agent.yaml"])
    }

    /// The agent's `/v1/status` as JSON, nil while it does not answer.
    func agentStatus(port: Int? = nil) async -> [String: Any]? {
        guard let response = try? await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port ?? agentPort)/v1/status"), timeout: peerRequestTimeout),
            let body = try? await response.body.collect(upTo: 1 << 20)
        else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
    }

    /// The collector's `/v1/fleet` as text, nil while it does not answer.
    func collectorFleet() async -> String? {
        guard let response = try? await client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(collectorPort)/v1/fleet"), timeout: peerRequestTimeout),
            let body = try? await response.body.collect(upTo: 1 << 20)
        else { return nil }
        return String(buffer: body)
    }

    /// The remote configuration's state and error and the sources that run, of the agent whose status listens on
    /// `port` (by default the fleet's agent).
    func remoteState(port: Int? = nil) async -> (state: String?, error: String?, sources: [String]) {
        let status = await agentStatus(port: port)
        let remote = status?["remote_config"] as? [String: Any]
        let sources = (status?["sources"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        return (remote?["state"] as? String, remote?["error"] as? String, sources)
    }

    /// How many samples of `source` the collector stored: distinct timestamps (a sensor's sample is several records).
    func storedSamples(source: String) -> Int {
        Set(((try? Harness.storedRecords(in: root + "/data")) ?? []).filter { $0.record.source == source }.map(\.record.timestamp)).count
    }

    func storedMessages(source: String) -> [String] {
        guard let records = try? Harness.storedRecords(in: root + "/data") else { return [] }
        return records.compactMap { entry in
            guard entry.record.source == source, case .log(let line) = entry.record.payload else { return nil }
            return line.message
        }
    }

    func stop() async {
        for process in [agent, collector].compactMap({ $0 }) where process.isRunning {
            process.terminate()
            await process.awaitExit()
        }
        try? await client.shutdown()
    }

    /// Whether the agent stopped the source `name`: an apply of a remote set or a local reload that lists it as
    /// changed or removed (`changed=[…] removed=[…]` in its log line: how a running source is stopped, and started
    /// again when changed), or its failure (`source stopped`). A clean stop logs nothing of its own at `info`.
    func agentStopped(source name: String) -> Bool {
        func lists(_ line: Substring, _ key: String) -> Bool {
            guard let start = line.range(of: " \(key)=[") else { return false }
            let list = line[start.upperBound...].prefix { $0 != "]" }
            return list.contains("\"\(name)\"")
        }
        return (agentLog?.text ?? "").split(separator: "\n").contains { line in
            (line.contains("source stopped") && line.contains("source=\(name)")) || lists(line, "changed")
                || lists(line, "removed")
        }
    }

    /// Whether the running agent logged that `revision` (`sha256:…`) was applied and went on probation.
    func agentLoggedProbation(of revision: String) -> Bool {
        (agentLog?.text ?? "").split(separator: "\n").contains { line in
            line.contains("remote configuration applied; on probation") && line.contains("revision=\(revision)")
        }
    }

    var logs: String { "agent:\n\(agentLog?.text ?? "")\ncollector:\n\(collectorLog?.text ?? "")" }
}

extension RemoteConfigFleet {
    /// Runs `body` with a new fleet, and stops its processes afterwards, whether `body` returned or threw.
    static func with(
        probation: String = "3s", collectorRequiresSignature: Bool = true,
        localSources: (_ root: String) -> [String] = { _ in [] }, _ body: (RemoteConfigFleet) async throws -> Void
    ) async throws {
        let fleet = try await RemoteConfigFleet(
            probation: probation, collectorRequiresSignature: collectorRequiresSignature, localSources: localSources)
        do {
            try await body(fleet)
        } catch {
            await fleet.stop()
            throw error
        }
        await fleet.stop()
    }
}

extension RemoteConfigFleet {
    /// Whether the agent runs a set other than `other` (its `effective` revision), on probation or applied.
    func runsOnProbationOrApplied(other: String) async -> Bool {
        guard let effective = await remote("effective"), effective != other else { return false }
        return ["applying", "applied"].contains(await remote("state"))
    }

    /// A field of the agent's `/v1/status` `remote_config` object (`state`, `desired`, `effective`, `error`, …) as
    /// text, nil while the agent does not answer or the field is not there; `port` names another agent's status.
    func remote(_ field: String, port: Int? = nil) async -> String? {
        guard let value = (await agentStatus(port: port)?["remote_config"] as? [String: Any])?[field] else { return nil }
        return value as? String ?? "\(value)"
    }

    /// Points the agent at `port` on loopback (a `FaultProxy` in front of the collector) instead of the collector.
    func routeAgent(throughPort port: Int) throws {
        let path = root + "/agent.yaml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let routed = text.replacingOccurrences(
            of: "url: \"http://127.0.0.1:\(collectorPort)\"", with: "url: \"http://127.0.0.1:\(port)\"")
        precondition(routed != text, "agent.yaml names no collector URL to replace")
        try routed.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Writes `documents/<name>.yaml` and an envelope signed here with the trusted key (`uplink config sign` makes
    /// only valid ones): `notAfter` in the past makes it expired, `change` alters it after signing (a bad signature).
    func signedDocument(
        _ name: String, serial: UInt64, audience: String = "labels.site=lab", notAfter: Int64? = nil,
        change: (inout ConfigEnvelope) -> Void = { _ in }, _ text: String
    ) throws {
        try write(text, to: "fleet/documents/\(name).yaml")
        let content = Array(try String(contentsOfFile: root + "/fleet/documents/\(name).yaml", encoding: .utf8).utf8)
        let key = try SigningKeyFile.readSecret(path: root + "/keys/ops.key").get()
        var envelope = ConfigEnvelope.sign(
            document: content, name: name, serial: serial, audience: try Audience(selector: audience),
            notAfter: notAfter ?? Int64(Date().timeIntervalSince1970) + 30 * 86_400, with: key)
        change(&envelope)
        try Data(envelope.json).write(to: URL(fileURLWithPath: root + "/fleet/documents/\(name).yaml.sig"))
    }

    /// Appends `lines` (each with a newline) to the file at `path`, which must exist.
    static func append(_ lines: [String], to path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
    }

    /// The agent's open descriptors on `path`, each as its number and the inode it refers to: equal before and after
    /// a swap means the file was never closed and opened again.
    func agentDescriptors(on path: String) -> [String] {
        guard let agent, agent.isRunning else { return [] }
        let directory = "/proc/\(agent.processIdentifier)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.sorted().compactMap { fd in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + fd)) == path else { return nil }
            var info = stat()
            guard stat(directory + "/" + fd, &info) == 0 else { return nil }
            return "fd \(fd) -> inode \(info.st_ino)"
        }
    }
}

/// A log file a test appends to while it waits for something else (one line per `writeOne()`, from inside the
/// `eventually` conditions, or from `keepWriting`), remembering every line, so that it can check each was stored
/// exactly once, in order.
final class LineWriter: Sendable {
    let path: String
    let prefix: String
    private let lines = Mutex<[String]>([])

    /// Every line written so far, in order.
    var written: [String] { lines.withLock { $0 } }

    /// Creates the file at `path`, empty.
    init(path: String, prefix: String) throws {
        self.path = path
        self.prefix = prefix
        try Data().write(to: URL(fileURLWithPath: path))
    }

    /// Appends the next line, `<prefix>-<n>`.
    func writeOne() throws {
        try lines.withLock { lines in
            let line = "\(prefix)-\(lines.count + 1)"
            try RemoteConfigFleet.append([line], to: path)
            lines.append(line)
        }
    }

    /// Writes a line to each of `writers` on every poll of an `eventually` (as the tests' own waits do) until the
    /// task is cancelled, for 10 minutes at most. A test that compares a tail's descriptors before and after
    /// something slow keeps its files busy so: a file quiet for 5 s is parked by the tailer (closed, and opened again
    /// when it grows), which is no restart.
    static func keepWriting(_ writers: [LineWriter]) -> Task<Void, Never> {
        Task {
            _ = await eventually(timeout: .seconds(600)) {
                for writer in writers { try? writer.writeOne() }
                return Task.isCancelled
            }
        }
    }
}

/// One more agent process of a fleet (`RemoteConfigFleet.startBox`).
struct RemoteConfigBox {
    let id: String
    /// Where its `/v1/status` listens.
    let port: Int
    /// Its `agent.state_dir`.
    let state: String
    let process: SpawnedProcess
    let log: CapturedOutput
}

extension RemoteConfigFleet {
    /// Starts another agent like the fleet's own (its `agent.yaml` as it is now, routed or not) as `id`, with a state
    /// directory and a status port of its own.
    func startBox(_ id: String) throws -> RemoteConfigBox {
        let port = try FreePort.pick()
        let state = root + "/state-\(id)"
        let own = "id: box-1, state_dir: \(root)/state, metrics_listen: \"127.0.0.1:\(agentPort)\""
        let text = try String(contentsOfFile: root + "/agent.yaml", encoding: .utf8)
        precondition(text.contains(own), "agent.yaml does not name the fleet's agent as expected")
        try write(text.replacingOccurrences(of: own, with: "id: \(id), state_dir: \(state), metrics_listen: \"127.0.0.1:\(port)\""), to: "agent-\(id).yaml")
        let (process, log) = try start(["run", "--config", root + "/agent-\(id).yaml"])
        return RemoteConfigBox(id: id, port: port, state: state, process: process, log: log)
    }

    /// Stops `boxes` (SIGTERM, then waits for each).
    static func stop(_ boxes: [RemoteConfigBox]) async {
        for box in boxes where box.process.isRunning { box.process.terminate() }
        for box in boxes { await box.process.awaitExit() }
    }
}

extension RemoteConfigFleet {
    /// The `generation` of what the collector assigns `agent` now (its `GET /v1/config`, asked as that agent), nil
    /// while it does not answer: when it has taken new assignments in, independently of any agent.
    func collectorGeneration(agent: String = "box-1") async -> Int? {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(collectorPort)/v1/config")
        request.headers.add(name: "Uplink-Agent", value: agent)
        request.headers.add(name: "Uplink-Labels", value: "site=lab")
        guard let response = try? await client.execute(request, timeout: peerRequestTimeout), response.status == .ok,
            let body = try? await response.body.collect(upTo: 1 << 20),
            let manifest = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
        else { return nil }
        return manifest["generation"] as? Int
    }
}
