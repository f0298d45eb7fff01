import Logging
import NIOSSL
import Synchronization
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Keeps the TLS configuration of `uplink.tls` current: before each new connection it compares the files' identities
/// (a `stat` each) with those last read and reads them again when one changed. A changed set that cannot be used
/// (half a rotation, a key that does not match, a broken file) is logged once and the last good configuration stays
/// in use; the files are tried again when they change again.
final class TLSReloader: Sendable {
    private struct State {
        var current: TLSMaterial?
        /// Identities of a set that failed to load, so one broken rotation is logged once, not per connection.
        var failedIdentities: [FileStatus?]?
        /// Why that set failed.
        var lastProblem: UplinkTLSProblem?
        var reloads = 0
    }

    let settings: UplinkTLS
    private let state: Mutex<State>
    private let logger: Logger

    init(settings: UplinkTLS, logger: Logger) {
        self.settings = settings
        self.logger = logger
        var initial = State()
        do throws(UplinkTLSProblem) {
            let material = try TLSMaterial.load(settings)
            Self.warnIfExpired(material, settings: settings, logger: logger)
            initial.current = material
        } catch {
            logger.error("uplink.tls cannot be used: \(error)")
            initial.failedIdentities = settings.watchedFiles.map { FileStatus(path: $0.path) }
            initial.lastProblem = error
        }
        state = Mutex(initial)
    }

    /// Times the files were read again after a change and used.
    var reloads: Int { state.withLock { $0.reloads } }

    /// The configuration for the next connection, reading the files again if they changed. Throws the load problem
    /// when no usable configuration was ever read.
    func configuration() throws(UplinkTLSProblem) -> TLSConfiguration {
        let identities = settings.watchedFiles.map { FileStatus(path: $0.path) }
        let result: Result<TLSConfiguration, UplinkTLSProblem> = state.withLock { state in
            if let current = state.current, current.identities == identities { return .success(current.configuration) }
            if state.failedIdentities == identities {
                if let current = state.current { return .success(current.configuration) }
                return .failure(state.lastProblem ?? UplinkTLSProblem(key: "tls", message: "the files could not be loaded"))
            }
            do throws(UplinkTLSProblem) {
                let material = try TLSMaterial.load(settings)
                let first = state.current == nil
                state.current = material
                state.failedIdentities = nil
                if !first { state.reloads += 1 }
                logger.notice(
                    first ? "uplink.tls files loaded" : "uplink.tls files changed on disk; the next connection uses them",
                    metadata: ["files": "\(settings.watchedFiles.map(\.path))"])
                Self.warnIfExpired(material, settings: settings, logger: logger)
                return .success(material.configuration)
            } catch {
                state.failedIdentities = identities
                state.lastProblem = error
                if let current = state.current {
                    logger.error("uplink.tls files changed on disk but cannot be used; keeping the previous ones: \(error)")
                    return .success(current.configuration)
                }
                logger.error("uplink.tls cannot be used: \(error)")
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func warnIfExpired(_ material: TLSMaterial, settings: UplinkTLS, logger: Logger) {
        guard let notValidAfter = material.clientCertificateNotValidAfter else { return }
        let now = time(nil)
        if notValidAfter < Int(now) {
            logger.warning(
                "the client certificate has expired; the collector will refuse it",
                metadata: ["cert_file": "\(settings.certificateFile ?? "")", "expired_seconds_ago": "\(Int(now) - notValidAfter)"])
        }
    }
}
