import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkFiles

/// The directory holding the fixture files.
let fixturesDirectory = AtomicFile.parentDirectory(of: #filePath) + "/Fixtures"

/// The repository root (for `examples.yaml`).
let repositoryRoot = AtomicFile.parentDirectory(of: AtomicFile.parentDirectory(of: AtomicFile.parentDirectory(of: #filePath)))

/// Path of a fixture file.
func fixture(_ name: String) -> String {
    fixturesDirectory + "/" + name
}

/// Decodes `yaml` as the file `test.yaml` (or `file`) with a fixed environment, as `uplink` does: the agent's
/// sections and the `collector` section (decoded by UplinkCollector) in one pass.
func decode(
    _ yaml: String, file: String = "test.yaml", environment: ConfigEnvironment = [:]
) -> ConfigResult<UplinkFile> {
    decodeWithCollector(yaml, file: file, environment: environment).result
}

/// `decode`, with the decoded `collector` section (nil when the file has none).
func decodeWithCollector(
    _ yaml: String, file: String = "test.yaml", environment: ConfigEnvironment = [:]
) -> (result: ConfigResult<UplinkFile>, collector: CollectorConfiguration?) {
    var collector: CollectorConfiguration?
    let result = UplinkFile.decode(yaml, file: file, environment: environment) { collector = CollectorConfiguration.decode($0) }
    return (result, collector)
}

/// Loads the file at `path` as `uplink` does (see `decode`).
func load(path: String, environment: ConfigEnvironment = [:]) -> ConfigResult<UplinkFile> {
    loadWithCollector(path: path, environment: environment).result
}

/// `load`, with the decoded `collector` section (nil when the file has none).
func loadWithCollector(
    path: String, environment: ConfigEnvironment = [:]
) -> (result: ConfigResult<UplinkFile>, collector: CollectorConfiguration?) {
    var collector: CollectorConfiguration?
    let result = UplinkFile.load(path: path, environment: environment) { collector = CollectorConfiguration.decode($0) }
    return (result, collector)
}

/// The rendered issues of decoding `yaml`.
func issues(_ yaml: String, file: String = "test.yaml", environment: ConfigEnvironment = [:]) -> [String] {
    decode(yaml, file: file, environment: environment).issues.map(\.description)
}

/// A minimal valid agent configuration, to which tests append or in which they replace lines.
let minimalAgent = """
    uplink:
      url: http://collector.test:4318
    sources:
      - name: cpu
        type: cpu
    """
