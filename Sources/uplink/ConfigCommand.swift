import ArgumentParser
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `uplink config`: the offline side of remote configuration (docs/remote-config.md): make a signing key, sign a
/// document for the collector to serve, check a signature as an agent would.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Sign remote configuration documents (keys stay offline; collectors only serve what they sign).",
        discussion: """
            Examples:
              uplink config keygen --out ops-2026            # ops-2026.key (secret, 0600) and ops-2026.pub
              uplink config sign --key ops-2026.key --serial 42 --audience 'labels.site=berlin-*' \\
                  --expires 180d documents/modbus.yaml        # writes documents/modbus.yaml.sig
              uplink config verify --trusted-key ops-2026.pub --agent-id edge-1 --label site=berlin-3 \\
                  documents/modbus.yaml
              uplink config pin --config /etc/uplink/uplink.yaml    # on a box: ignore remote documents
            """,
        subcommands: [Keygen.self, Sign.self, Verify.self, Pin.self, Unpin.self]
    )

    /// `uplink config keygen`.
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an Ed25519 key pair: PREFIX.key (secret, mode 0600) and PREFIX.pub (for trusted_keys).",
            discussion: "Refuses to overwrite an existing file. Keep the .key file off collectors and boxes.")

        @Option(name: .long, help: "Path prefix of the two files.")
        var out: String

        @Option(name: .long, help: "The key id envelopes name (default: the file name of --out).")
        var keyID: String?

        func run() throws {
            let id = keyID ?? String(out.split(separator: "/").last ?? "")
            guard SigningKeyFile.isValidKeyID(id) else {
                throw ValidationError("key id '\(id)' must be 1 to 64 of A-Z a-z 0-9 . _ - (give --key-id)")
            }
            let secretPath = out + ".key"
            let publicPath = out + ".pub"
            for path in [secretPath, publicPath] where access(path, F_OK) == 0 {
                throw CommandFailure("\(path) exists already; keygen never overwrites a key")
            }
            let signing = SigningKeyFile.SigningKey(id: id, key: .generate())
            let trusted = SigningKeyFile.TrustedKey(id: id, key: signing.key.publicKey)
            try AtomicFile.write(Array(SigningKeyFile.secretText(signing).utf8), to: secretPath, mode: 0o600)
            try AtomicFile.write(Array(SigningKeyFile.publicText(trusted).utf8), to: publicPath, mode: 0o644)
            print("key '\(id)': secret \(secretPath) (keep offline), public \(publicPath) (list it in remote_config.trusted_keys)")
        }
    }

    /// `uplink config sign`.
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign a remote configuration document: writes FILE.sig, its detached envelope.",
            discussion: """
                The envelope binds the document's SHA-256 and size to its name, a serial, an audience and an expiry. \
                Agents refuse a serial at or below one they have seen for the same name with other content, a \
                document for another audience, and a new apply after --expires.
                """)

        @Option(name: .long, help: "The secret key file (from uplink config keygen).")
        var key: String

        @Option(name: .long, help: "The document's serial: above every earlier serial of this name.")
        var serial: UInt64

        @Option(name: .long, help: "Who it is for: '*', or agent=GLOB and labels.NAME=GLOB terms joined by commas.")
        var audience: String

        @Option(name: .long, help: "When agents stop applying it anew: a span such as 180d or 720h, or a UTC time such as 2027-05-27T00:00:00Z.")
        var expires: String

        @Option(name: .long, help: "The document's name (default: FILE's name without .yaml).")
        var name: String?

        @Option(name: .long, help: "Where to write the envelope (default: FILE.sig).")
        var output: String?

        @Argument(help: "The document (YAML with only sources:).")
        var file: String

        func run() throws {
            let signing: SigningKeyFile.SigningKey
            switch SigningKeyFile.readSecret(path: key) {
            case .success(let read): signing = read
            case .failure(let failure): throw CommandFailure(failure.description)
            }
            let audience: Audience
            do {
                audience = try Audience(selector: self.audience)
            } catch {
                throw ValidationError(error.description)
            }
            let documentName = name ?? Self.documentName(of: file)
            guard ConfigEnvelope.isValidName(documentName) else {
                throw ValidationError("document name '\(documentName)' must be 1 to 128 of A-Z a-z 0-9 . _ - (give --name)")
            }
            let now = Int64(time(nil))
            let notAfter = try Self.expiry(expires, now: now)
            guard notAfter > now else { throw ValidationError("--expires \(expires) is in the past") }
            let document: [UInt8]
            switch WholeFile.read(path: file) {
            case .success(let bytes): document = bytes
            case .failure(let failure): throw CommandFailure("cannot read \(file): \(failure.reasonDescription)")
            }
            let envelope = ConfigEnvelope.sign(
                document: document, name: documentName, serial: serial, audience: audience, notAfter: notAfter,
                with: signing)
            let path = output ?? file + ".sig"
            try AtomicFile.write(envelope.json, to: path)
            print("\(path): '\(documentName)' serial \(serial), \(document.count) bytes, sha256 \(envelope.sha256.hex.prefix(12)), "
                + "for \(audience.selector), until \(ConfigEnvelope.rfc3339(notAfter)), key '\(signing.id)'")
        }

        /// `modbus.yaml` → `modbus`.
        static func documentName(of path: String) -> String {
            var base = String(path.split(separator: "/").last ?? "")
            for suffix in [".yaml", ".yml"] where base.hasSuffix(suffix) {
                base.removeLast(suffix.count)
            }
            return base
        }

        /// `--expires`: `<N>d`, a duration (`720h`), or an RFC 3339 UTC time; seconds since the epoch.
        static func expiry(_ text: String, now: Int64) throws -> Int64 {
            if text.hasSuffix("d"), let days = Int64(text.dropLast()), days > 0, days < 100_000 {
                return now + days * 86_400
            }
            if let time = ConfigEnvelope.seconds(rfc3339: text) { return time }
            do {
                return now + (try ConfigValueParsing.duration(text)).components.seconds
            } catch {
                throw ValidationError("--expires '\(text)': give days (180d), a duration (720h) or a UTC time (2027-05-27T00:00:00Z)")
            }
        }
    }

    /// `uplink config verify`.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a document and its envelope as an agent would (content, key, signature, audience, expiry).",
            discussion: "Exits 0 when an agent with this id and these labels would accept it, 1 with the reason when not.")

        @Option(name: .long, help: "A trusted public key file (repeat for several).")
        var trustedKey: [String]

        @Option(name: .long, help: "The agent id to check the audience against.")
        var agentID: String = "*"

        @Option(name: .long, help: "An agent label NAME=VALUE to check the audience against (repeatable).")
        var label: [String] = []

        @Option(name: .long, help: "The envelope (default: FILE.sig).")
        var signature: String?

        @Argument(help: "The document.")
        var file: String

        func run() throws {
            var keys: [SigningKeyFile.TrustedKey] = []
            for path in trustedKey {
                switch SigningKeyFile.readPublic(path: path) {
                case .success(let key): keys.append(key)
                case .failure(let failure): throw CommandFailure(failure.description)
                }
            }
            guard !keys.isEmpty else { throw ValidationError("give at least one --trusted-key") }
            var labels: [String: String] = [:]
            for term in label {
                guard let equals = term.firstIndex(of: "="), equals != term.startIndex else {
                    throw ValidationError("--label '\(term)': expected NAME=VALUE")
                }
                labels[String(term[..<equals])] = String(term[term.index(after: equals)...])
            }
            let envelopePath = signature ?? file + ".sig"
            let document: [UInt8]
            let envelopeBytes: [UInt8]
            switch (WholeFile.read(path: file), WholeFile.read(path: envelopePath, limit: ConfigEnvelope.maximumBytes)) {
            case (.success(let d), .success(let e)):
                document = d
                envelopeBytes = e
            case (.failure(let failure), _): throw CommandFailure("cannot read \(file): \(failure.reasonDescription)")
            case (_, .failure(let failure)): throw CommandFailure("cannot read \(envelopePath): \(failure.reasonDescription)")
            }
            let envelope: ConfigEnvelope
            do {
                envelope = try ConfigEnvelope(json: envelopeBytes)
            } catch {
                print("\(envelopePath): \(error.description)")
                throw ExitCode(1)
            }
            let verdict = EnvelopeVerifier(trustedKeys: keys).verify(
                envelope, document: document, named: Sign.documentName(of: file), agentID: agentID, labels: labels,
                seen: nil, now: Int64(time(nil)), isNewApply: true)
            switch verdict {
            case .success:
                print("\(file): valid: '\(envelope.name)' serial \(envelope.serial), key '\(envelope.keyID)', "
                    + "for \(envelope.audience.selector), until \(ConfigEnvelope.rfc3339(envelope.notAfter))")
            case .failure(let refusal):
                print("\(file): refused: \(refusal)")
                throw ExitCode(1)
            }
        }
    }
}

extension ConfigCommand {
    /// `uplink config pin`.
    struct Pin: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Break glass on a box: ignore remote documents until `uplink config unpin`.",
            discussion: """
                Writes state_dir/remote/pin. Reload (systemctl reload uplink) or restart the agent for it to take \
                effect: it stops its remote sources, runs its local file only and reports the state pinned. The \
                last-known-good set stays on disk. Exits 0 when the box is pinned.
                """)

        @Option(name: .shortAndLong, help: "The agent's configuration file (for agent.state_dir).")
        var config: String = "/etc/uplink/uplink.yaml"

        func run() throws {
            let store = try ConfigCommand.store(config)
            do {
                try store.prepare(removingLeftovers: false)
                try store.pin(atMilliseconds: WallClock.nowNanoseconds() / 1_000_000)
            } catch {
                throw CommandFailure("cannot pin: \(error)")
            }
            print("pinned: remote documents are ignored on this box (\(store.directory)/pin); restart or reload the agent")
        }
    }

    /// `uplink config unpin`.
    struct Unpin: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take remote documents again after `uplink config pin`.")

        @Option(name: .shortAndLong, help: "The agent's configuration file (for agent.state_dir).")
        var config: String = "/etc/uplink/uplink.yaml"

        func run() throws {
            let store = try ConfigCommand.store(config)
            do {
                try store.unpin()
            } catch {
                throw CommandFailure("cannot unpin: \(error)")
            }
            print("unpinned: remote documents are taken again (restart or reload the agent)")
        }
    }

    /// The remote configuration state of the agent configured in `path`.
    static func store(_ path: String) throws -> RemoteConfigStore {
        let file = try ConfigurationLoading.load(path).file
        return RemoteConfigStore(stateDirectory: file.agent.stateDirectory)
    }
}

/// A command that could not do its job for a reason outside its arguments (a file exists, cannot be read): printed
/// as `Error: <message>`, exit status 1, without the usage text an argument error gets.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
