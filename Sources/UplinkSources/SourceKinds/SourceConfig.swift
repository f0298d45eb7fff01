import UplinkCore

/// The typed configuration of one source: a value of its kind's configuration type (`CPUConfig`, `TailConfig`, …).
///
/// Two configurations are equal when they are of the same kind with equal settings; a live reload restarts a source
/// exactly when its configuration is not equal to the running one.
public struct SourceConfig: Sendable, Equatable {
    /// The kind's own settings.
    public let settings: any SourceKindConfig

    /// The configuration holding `settings`.
    public init(_ settings: any SourceKindConfig) {
        self.settings = settings
    }

    /// The kind this configuration is for.
    public var kind: SourceKind { SourceKind(type(of: settings)) }

    /// The settings when they are of type `type` (e.g. `config.settings(as: TailConfig.self)`), else nil.
    public func settings<Settings: SourceKindConfig>(as type: Settings.Type) -> Settings? {
        settings as? Settings
    }

    public static func == (lhs: SourceConfig, rhs: SourceConfig) -> Bool {
        lhs.settings.isEqual(to: rhs.settings)
    }
}
