import Foundation

/// Prometheus (Debian `prometheus`, 2.42) in a temporary directory on a free loopback port, scraping the given
/// loopback targets every second.
public final class TestPrometheus: @unchecked Sendable {
    public static let binary = "/usr/bin/prometheus"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let missingMessage = "\(binary) is not installed (Debian package prometheus); skipping"

    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    /// One scrape job per entry: job name → `host:port`.
    public init(directory: String, targets: [String: String]) async throws {
        self.directory = directory
        self.port = try FreePort.pick()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
        for (job, target) in targets.sorted(by: { $0.key < $1.key }) {
            configuration += "  - job_name: \(job)\n    static_configs:\n      - targets: ['\(target)']\n"
        }
        try configuration.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = port
        process = try await ChildProcess.startServer(
            "Prometheus on port \(port)",
            [
                Self.binary, "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
            ], outputPath: directory + "/prometheus.log", timeout: .seconds(60), grace: 10
        ) { LoopbackHTTP10.request(port: port, path: "/-/ready")?.status == 200 }
    }

    public var log: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    public func stop() async {
        await process?.terminate(grace: 10)
        process = nil
    }

    /// The instant vector of `query` through `/api/v1/query`: each sample's labels and value.
    public func query(_ query: String) -> [(labels: [String: String], value: Double)] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = query.addingPercentEncoding(withAllowedCharacters: allowed) ?? query
        guard let response = LoopbackHTTP10.request(port: port, path: "/api/v1/query?query=\(encoded)"),
            response.status == 200,
            let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { return [] }
        return result.compactMap { sample in
            guard let labels = sample["metric"] as? [String: String], let value = sample["value"] as? [Any],
                value.count == 2, let text = value[1] as? String, let number = Double(text)
            else { return nil }
            return (labels, number)
        }
    }

    /// The value of `query` when it has exactly one sample.
    public func value(_ query: String) -> Double? {
        let samples = self.query(query)
        return samples.count == 1 ? samples[0].value : nil
    }
}

/// promtool (Debian `prometheus`, beside the server): `promtool check metrics` reads an exposition on standard input,
/// exits 0 when it parses, and prints what its linter finds ("no help text", "counter metrics should have \"_total\"
/// suffix", …) on standard error, exiting 3 when it found anything.
public enum TestPromtool {
    public static let binary = "/usr/bin/promtool"
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: binary) }
    public static let missingMessage = "\(binary) is not installed (Debian package prometheus); skipping"

    /// `promtool check metrics` with `exposition` on its standard input (from a file in `directory`): its exit status
    /// and what it printed, standard output and error together.
    public static func checkMetrics(_ exposition: String, directory: String) async throws
        -> (status: Int32, output: String)
    {
        let input = directory + "/exposition-\(UUID().uuidString).txt"
        try exposition.write(toFile: input, atomically: true, encoding: .utf8)
        let done = try await SpawnedProcess.run([binary, "check", "metrics"], inputPath: input, mergingError: true)
        return (done.status, done.outputText)
    }
}
