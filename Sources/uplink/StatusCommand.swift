import ArgumentParser
import AsyncHTTPClient
import FoundationEssentials
import UplinkAgent
import UplinkConfig
import UplinkTransport

#if canImport(Glibc)
import Glibc
#endif

/// `uplink status`: asks a running agent (its `agent.metrics_listen` endpoint) how it is doing.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what a running agent is doing: its stream, its buffer and its sources.",
        discussion: """
            Reads GET /v1/status from the agent's endpoint (agent.metrics_listen). The address comes from --address, \
            else from agent.metrics_listen in --config (default /etc/uplink/uplink.yaml, when it exists), else \
            127.0.0.1:9464. Exits 0 when the agent answered, 1 when it could not be reached or answered nonsense.
            """
    )

    @Option(name: .shortAndLong, help: "The agent's configuration file, to find agent.metrics_listen.")
    var config: String?

    @Option(help: "The agent's endpoint, host:port (overrides the configuration).")
    var address: String?

    @Flag(help: "Print the status as JSON (the agent's /v1/status) for scripts.")
    var json = false

    @Flag(help: "Refresh in place every --interval seconds until Ctrl-C, like top.")
    var watch = false

    @Option(help: "Seconds between refreshes with --watch.")
    var interval: Double = 2

    static let defaultConfigPath = "/etc/uplink/uplink.yaml"
    static let defaultAddress = ConfigHostPort(host: "127.0.0.1", port: 9464)

    func validate() throws {
        guard interval >= 0.1, interval.isFinite else { throw ValidationError("--interval must be at least 0.1 seconds") }
        if let address, case .failure(let error) = ConfigURL.hostPort(address) {
            throw ValidationError("--address: \(error.message)")
        }
    }

    func run() async throws {
        let endpoint = try resolveAddress()
        let url = "http://\(Self.connectable(endpoint))/v1/status"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        guard watch else {
            let outcome = await Self.fetch(url, client: client)
            try? await client.shutdown()
            switch outcome {
            case .success(let (status, body)):
                print(json ? String(decoding: body, as: UTF8.self) : StatusView.render(status), terminator: json ? "\n" : "")
            case .failure(let message):
                ConfigurationLoading.printToStandardError("uplink status: \(message)")
                throw ExitCode(1)
            }
            return
        }
        while !Task.isCancelled {
            let outcome = await Self.fetch(url, client: client)
            var screen = "\u{1B}[H\u{1B}[2J"
            switch outcome {
            case .success(let (status, body)):
                screen += json ? String(decoding: body, as: UTF8.self) + "\n" : StatusView.render(status)
            case .failure(let message):
                screen += "uplink status: \(message)\n"
            }
            screen += "\n(refreshing every \(StatusView.number(interval)) s; Ctrl-C to stop)\n"
            print(screen, terminator: "")
            fflush(nil)
            try? await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
        }
        try? await client.shutdown()
    }

    /// --address, else the configuration's agent.metrics_listen, else the default.
    private func resolveAddress() throws -> ConfigHostPort {
        if let address, case .success(let parsed) = ConfigURL.hostPort(address) { return parsed }
        let path = config ?? (access(Self.defaultConfigPath, R_OK) == 0 ? Self.defaultConfigPath : nil)
        guard let path else { return Self.defaultAddress }
        let file = try ConfigurationLoading.load(path).file
        guard let listen = file.agent.metricsListen else {
            ConfigurationLoading.printToStandardError(
                "uplink status: \(path) does not set agent.metrics_listen, so the agent serves no status; add e.g. "
                    + "'agent: { metrics_listen: 127.0.0.1:9464 }' and restart it")
            throw ExitCode(1)
        }
        return listen
    }

    /// Where to connect for a listen address: a wildcard address is reached on loopback.
    static func connectable(_ address: ConfigHostPort) -> String {
        switch address.host {
        case "0.0.0.0", "": return "127.0.0.1:\(address.port)"
        case "::": return "[::1]:\(address.port)"
        default: return address.description
        }
    }

    enum Outcome {
        case success((AgentStatus, [UInt8]))
        case failure(String)
    }

    static func fetch(_ url: String, client: HTTPClient) async -> Outcome {
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            let response = try await client.execute(request, timeout: .seconds(3))
            let body = try await response.body.collect(upTo: 4 * 1024 * 1024)
            guard response.status == .ok else {
                return .failure("the agent at \(url) answered HTTP \(response.status.code)")
            }
            let bytes = Array(body.readableBytesView)
            do {
                return .success((try AgentStatus.decoder().decode(AgentStatus.self, from: Data(bytes)), bytes))
            } catch {
                return .failure("\(url) did not answer with an agent status (\(error)); is that an uplink agent?")
            }
        } catch {
            let reason = ConnectFailureText.describe(error)
            return .failure("no agent answers at \(url) (\(reason)): is it running, with agent.metrics_listen set?")
        }
    }
}

/// The human-readable status: a few lines, like `systemctl status`.
enum StatusView {
    static func render(_ status: AgentStatus) -> String {
        var lines: [String] = []
        lines.append("agent \(status.agent)  uplink \(status.version), pid \(status.pid), up \(duration(status.uptimeSeconds))"
            + (status.ready ? "" : "  (sources starting)"))
        let stream = status.stream
        var state = String(stream.state.map { $0 == "_" ? " " : $0 })
        if let since = stream.stateSince { state += " for \(duration(status.now - since))" }
        lines.append("stream   \(state) → \(stream.collectorURL) (\(stream.compression))")
        lines.append(
            "         acknowledged #\(stream.acknowledged), sent #\(stream.lastSent); \(stream.connectionAttempts) "
                + "connection attempt\(stream.connectionAttempts == 1 ? "" : "s"), \(stream.failures) failure\(stream.failures == 1 ? "" : "s")")
        if let error = stream.lastError {
            let when = stream.lastErrorAt.map { " \(duration(status.now - $0)) ago" } ?? ""
            lines.append("         last error\(when): \(error)")
        }
        let ratio = stream.bytesSent > 0 ? " (\(number(Double(stream.lineBytes) / Double(stream.bytesSent)))× compressed)" : ""
        lines.append("         \(stream.recordsSent) records, \(bytes(stream.bytesSent)) sent\(ratio)")
        let buffer = status.buffer
        var held = "buffer   \(bytes(buffer.usedBytes)) of \(bytes(buffer.capacityBytes)): \(buffer.frames) unacknowledged"
        if let age = buffer.oldestUnacknowledgedAgeSeconds { held += " (oldest \(duration(age)))" }
        held += ", \(buffer.unsentFrames) unsent"
        if let resident = buffer.residentBytes { held += "; \(bytes(resident)) in memory" }
        if let disk = buffer.diskBytes { held += "; \(bytes(disk)) on disk" }
        lines.append(held)
        let table = [["SOURCE", "KIND", "STATE", "REC/S (1 min)", "RECORDS", "DROPPED"]]
            + status.sources.map {
                [$0.name, $0.kind, $0.state == "running" ? ($0.health ?? $0.state) : $0.state, number($0.recordsPerSecond),
                 "\($0.records)", "\($0.dropped)"]
            }
        let widths = (0..<6).map { column in table.map { $0[column].count }.max() ?? 0 }
        for (index, row) in table.enumerated() {
            let cells = row.enumerated().map { column, cell in
                column >= 3 ? String(repeating: " ", count: widths[column] - cell.count) + cell
                    : cell + String(repeating: " ", count: widths[column] - cell.count)
            }
            lines.append((index == 0 ? "sources  " : "         ") + cells.joined(separator: "  "))
        }
        for source in status.sources {
            if let reason = source.healthReason { lines.append("         \(source.name): \(reason)") }
        }
        if let remote = status.remoteConfig {
            var line = "config   remote \(remote.state.rawValue)"
            if let effective = remote.effective { line += ", runs \(Self.revision(effective))" }
            if let lkg = remote.lastKnownGood, lkg != remote.effective { line += ", last-known-good \(Self.revision(lkg))" }
            if let desired = remote.desired, desired != remote.effective { line += ", assigned \(Self.revision(desired))" }
            if let generation = remote.generation { line += " (generation \(generation))" }
            lines.append(line)
            if let error = remote.error { lines.append("         \(error)") }
        }
        let drops = status.sources.reduce(0) { $0 + $1.dropped }
        if drops > 0 { lines.append("         \(drops) records dropped in total (buffer full or too large)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `sha256:1d3e…` shortened to `1d3e5a7b9c0d`.
    static func revision(_ revision: String) -> String {
        String(revision.dropFirst(revision.hasPrefix("sha256:") ? 7 : 0).prefix(12))
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 10 { return "\(number(seconds)) s" }
        let whole = Int(seconds)
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        if whole < 86400 { return "\(whole / 3600) h \(whole / 60 % 60) min" }
        return "\(whole / 86400) d \(whole / 3600 % 24) h"
    }

    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : "\(number(value)) \(units[unit])"
    }

    /// One decimal below 100, none above.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "?" }
        if value >= 100 { return "\(Int(value.rounded()))" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
