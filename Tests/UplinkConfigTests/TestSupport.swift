import UplinkAgent
import UplinkConfig
import UplinkCore

/// The directory holding the fixture files.
let fixturesDirectory = ConfigFiles.directory(of: #filePath) + "/Fixtures"

/// The repository root (for `examples.yaml`).
let repositoryRoot = ConfigFiles.directory(of: ConfigFiles.directory(of: ConfigFiles.directory(of: #filePath)))

/// Path of a fixture file.
func fixture(_ name: String) -> String {
    fixturesDirectory + "/" + name
}

/// Decodes `yaml` as the file `test.yaml` (or `file`) with a fixed environment.
func decode(
    _ yaml: String, file: String = "test.yaml", environment: ConfigEnvironment = [:]
) -> ConfigResult<UplinkFile> {
    UplinkFile.decode(yaml, file: file, environment: environment)
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
