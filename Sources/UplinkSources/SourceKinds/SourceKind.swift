/// One kind of source, named as in the configuration (`sources[].type`). Every kind is listed in
/// `SourceKind.allCases` (Registry.swift); `CPUConfig.kind` names one.
public struct SourceKind: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The kind's configuration type, which defines the kind (see `SourceKindConfig`).
    public let configType: any SourceKindConfig.Type

    /// The kind whose configuration type is `configType`.
    public init(_ configType: any SourceKindConfig.Type) {
        self.configType = configType
    }

    /// The registered kind with the given configuration name, or `nil` for an unknown name.
    public init?(typeName: String) {
        guard let kind = Self.allCases.first(where: { $0.typeName == typeName }) else { return nil }
        self = kind
    }

    /// The name of the kind in the configuration (`type: cpu`).
    public var typeName: String { configType.typeName }

    /// Whether its sources run on the send path's event loop (`SourceKindConfig.runsOnSendPathLoop`).
    public var runsOnSendPathLoop: Bool { configType.runsOnSendPathLoop }

    /// The configuration of this kind with every setting at its default.
    public var defaultConfig: SourceConfig { SourceConfig(configType.defaults) }

    /// The type name.
    public var description: String { typeName }

    public static func == (lhs: SourceKind, rhs: SourceKind) -> Bool {
        ObjectIdentifier(lhs.configType) == ObjectIdentifier(rhs.configType)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(configType))
    }
}
