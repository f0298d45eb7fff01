import UplinkConfig
import UplinkCore
import UplinkWire

extension UplinkFile.AgentSection {
    static func decode(_ section: ConfigMapping) -> Self {
        var agent = Self()
        if let id = section.string("id", { id in
            identifierProblem(id).map { problem in .failure(ConfigValueError(message: problem)) } ?? .success(id)
        }) {
            agent.id = id
        }
        if let directory = section.string("state_dir") { agent.stateDirectory = directory }
        if let listen = section.hostPort("metrics_listen") { agent.metricsListen = listen }
        return agent
    }

    /// Why `id` cannot be an agent id (it travels in an HTTP header), or nil.
    static func identifierProblem(_ id: String) -> String? {
        if id.utf8.count > 255 { return "the agent id is longer than 255 bytes" }
        if id.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) {
            return "the agent id '\(id)' contains whitespace or control characters"
        }
        return nil
    }
}

extension UplinkFile.BufferSection {
    static func decode(_ section: ConfigMapping) -> Self {
        var buffer = Self()
        if let bytes = section.size("max_bytes", .atLeast(minimumBytes)) { buffer.maxBytes = bytes }
        if let overflow = section.enumeration("overflow", as: OverflowPolicy.self) { buffer.overflow = overflow }
        if let persist = section.mapping("persist", allowedKeys: PersistSection.keys) {
            buffer.persist = PersistSection.decode(persist, bufferBytes: buffer.maxBytes)
        }
        return buffer
    }
}

extension UplinkFile.UplinkSection {
    static func decode(_ section: ConfigMapping) -> Self {
        var uplink = Self()
        if let url = section.require(
            "url", hint: "use 'embedded' for an in-process collector, or the collector's URL such as 'http://host:4318'")
        {
            if let text = section.decoder.url(url, at: section.path("url"), specialValues: ["embedded"]) {
                uplink.target = text == "embedded" ? .embedded : .url(text)
            }
        }
        uplink.token = section.secret("token", fileKey: "token_file")
        if let backoff = section.backoff("backoff") { uplink.backoff = backoff }
        if let heartbeat = section.duration("heartbeat", .greaterThan(.zero)) { uplink.heartbeat = heartbeat }
        if let stall = section.duration("stall_timeout", .greaterThan(.zero)) { uplink.stallTimeout = stall }
        if let connect = section.duration(
            "connect_timeout", ConfigConstraint(minimum: (.zero, false), maximum: maximumConnectTimeout))
        {
            uplink.connectTimeout = connect
        }
        if let bytes = section.size("stream_buffer", .atLeast(minimumStreamBufferBytes)) {
            uplink.streamBufferBytes = bytes
        }
        if let linger = section.duration("linger", ConfigConstraint(minimum: (.zero, true), maximum: maximumLinger)) {
            uplink.linger = linger
        }
        if let drain = section.duration("drain_timeout") { uplink.drainTimeout = drain }
        if let compression = section.enumeration("compression", as: WireCompression.self) {
            uplink.compression = compression
        }
        decodeNetwork(section, into: &uplink)
        return uplink
    }
}
