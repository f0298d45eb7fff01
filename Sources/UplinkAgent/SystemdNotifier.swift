import Logging
import ServiceLifecycle
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Readiness notifications for systemd's `Type=notify` services (the `sd_notify(3)` protocol), without libsystemd.
///
/// systemd passes the path of an `AF_UNIX` datagram socket in `$NOTIFY_SOCKET`; a service reports its state by
/// sending newline-separated `KEY=VALUE` assignments to it: `READY=1` once it is up (systemctl start returns then, and
/// units ordered after it start), `STOPPING=1` when it begins to shut down, `STATUS=…` a line shown by
/// `systemctl status`. A name starting with `@` is an abstract socket (Linux): the `@` stands for a leading NUL byte.
///
/// When `$NOTIFY_SOCKET` is not set (not run by systemd, or not `Type=notify`) every call does nothing, so the
/// commands call it unconditionally.
///
/// ```swift
/// let notifier = SystemdNotifier()        // reads $NOTIFY_SOCKET
/// try notifier.notify(.ready, .status("streaming"))
/// ```
public struct SystemdNotifier: Sendable {
    /// One assignment of a notification message.
    public struct State: Sendable, Equatable, CustomStringConvertible {
        /// The assignment as sent, e.g. `READY=1`.
        public let description: String

        /// `READY=1`: start-up is finished.
        public static let ready = State(description: "READY=1")
        /// `STOPPING=1`: the service is shutting down.
        public static let stopping = State(description: "STOPPING=1")
        /// `RELOADING=1`: the service is reloading its configuration.
        public static let reloading = State(description: "RELOADING=1")

        /// `STATUS=text`: a free-form status line for `systemctl status`. Line breaks are replaced by spaces, since
        /// each line of a message is one assignment.
        public static func status(_ text: String) -> State {
            State(description: "STATUS=" + String(text.map { $0.isNewline ? " " : $0 }))
        }

        /// `MONOTONIC_USEC=…`: now on `CLOCK_MONOTONIC`, in microseconds. systemd asks for it with `RELOADING=1`,
        /// to tell this reload from an earlier one.
        public static func monotonicNow() -> State {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return State(description: "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000)")
        }

        /// Any other assignment (`KEY=VALUE`), e.g. `EXTEND_TIMEOUT_USEC=…`.
        public static func custom(_ assignment: String) -> State {
            State(description: assignment)
        }
    }

    /// Why a notification could not be sent.
    public struct Error: Swift.Error, Sendable, CustomStringConvertible {
        /// A stable code: `unsupported_address`, `address_too_long`, `socket` or `send`.
        public let code: String
        /// A human-readable message naming the socket and the system's reason.
        public let message: String

        public var description: String { message }
    }

    /// The socket notifications go to (`$NOTIFY_SOCKET` as given), or nil when notifications are off.
    public let socketPath: String?

    /// Whether notifications are sent at all (`$NOTIFY_SOCKET` was set and not empty).
    public var isEnabled: Bool { socketPath != nil }

    /// A notifier for `socketPath`: an absolute path, or `@name` for an abstract socket. Nil or empty disables it.
    public init(socketPath: String?) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A notifier for the socket in the environment variable `NOTIFY_SOCKET`, if set.
    public init() {
        self.init(socketPath: getenv("NOTIFY_SOCKET").map { String(cString: $0) })
    }

    /// Sends `states` as one datagram, one assignment per line. Does nothing when notifications are off.
    ///
    /// Sending does not block: the datagram is queued on the socket, or the call fails (e.g. the socket is gone).
    public func notify(_ states: State...) throws(SystemdNotifier.Error) {
        try notify(states)
    }

    /// Sends `states` as one datagram, one assignment per line. Does nothing when notifications are off.
    public func notify(_ states: [State]) throws(SystemdNotifier.Error) {
        guard let socketPath, !states.isEmpty else { return }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract {
            pathBytes[0] = 0
        } else if pathBytes.first != UInt8(ascii: "/") {
            throw Error(
                code: "unsupported_address",
                message: "NOTIFY_SOCKET '\(socketPath)' is neither an absolute path nor an abstract socket name (@…)")
        }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its terminating NUL; an abstract name is exactly its bytes.
        guard pathBytes.count + (abstract ? 0 : 1) <= capacity else {
            throw Error(
                code: "address_too_long",
                message: "NOTIFY_SOCKET '\(socketPath)' is longer than the \(capacity - 1) bytes a socket path can have")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        let addressLength = socklen_t(pathOffset + pathBytes.count + (abstract ? 0 : 1))

        #if canImport(Glibc)
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let type = SOCK_DGRAM | SOCK_CLOEXEC
        #endif
        let descriptor = socket(AF_UNIX, type, 0)
        guard descriptor >= 0 else {
            throw Error(code: "socket", message: "cannot create a socket to notify systemd: \(FileError.text(errno: errno))")
        }
        defer { close(descriptor) }

        let message = Array(states.map(\.description).joined(separator: "\n").utf8)
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, addressLength)
                }
            }
        }
        guard sent == message.count else {
            throw Error(code: "send", message: "cannot notify systemd at '\(socketPath)': \(FileError.text(errno: errno))")
        }
    }

    /// Like `notify(_:)`, but logs a failure as a warning instead of throwing: a service manager that cannot be told
    /// about a state change is no reason to stop collecting.
    public func notify(_ states: State..., logger: Logger) {
        do throws(SystemdNotifier.Error) {
            try notify(states)
        } catch {
            logger.warning("systemd notification failed", metadata: ["error": "\(error)", "code": "\(error.code)"])
        }
    }
}

/// A service that tells systemd when the services around it are up and when they begin to shut down.
///
/// Put it **last** in a `ServiceGroup`'s services: the group starts services in order, so when this one runs the
/// others have been started; and the group shuts services down in reverse order, so this one hears of a graceful
/// shutdown (SIGTERM, SIGINT) first, before the others begin to drain. It then:
///
/// 1. waits for `readiness` (e.g. a collector listening), then sends `READY=1` and `STATUS=<what it returned>`;
/// 2. waits for the group's graceful shutdown (or cancellation), then sends `STOPPING=1` and `STATUS=stopping`,
///    and returns (so give it `successTerminationBehavior: .ignore`, as `serviceConfiguration` does).
///
/// When `readiness` throws, or the group shuts down first, `READY=1` is not sent: the failing service ends the
/// group, and systemd sees the process exit during start-up.
public struct SystemdNotifierService: Service {
    /// Where notifications go.
    public let notifier: SystemdNotifier
    private let readiness: @Sendable () async throws -> String
    private let logger: Logger

    /// - Parameters:
    ///   - notifier: By default, the socket in `$NOTIFY_SOCKET` (no-op when unset).
    ///   - logger: Where failures to notify are logged (as warnings).
    ///   - readiness: What to wait for before `READY=1`; returns the `STATUS=` text sent with it.
    public init(
        notifier: SystemdNotifier = SystemdNotifier(),
        logger: Logger,
        readiness: @escaping @Sendable () async throws -> String
    ) {
        self.notifier = notifier
        self.logger = logger
        self.readiness = readiness
    }

    /// A notifier service that is ready as soon as it runs, with the status line `status`.
    public init(notifier: SystemdNotifier = SystemdNotifier(), status: String, logger: Logger) {
        self.init(notifier: notifier, logger: logger, readiness: { status })
    }

    /// The configuration to add last to a `ServiceGroup`: its ending does not end the group.
    public var serviceConfiguration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)
    }

    public func run() async throws {
        do {
            let status = try await cancelWhenGracefulShutdown { try await readiness() }
            if !Task.isCancelled, !Task.isShuttingDownGracefully {
                notifier.notify(.ready, .status(status), logger: logger)
                if notifier.isEnabled { logger.debug("notified systemd: READY=1") }
            }
        } catch {
            logger.debug("not notifying systemd of readiness: \(error)")
        }
        // Returns when the group shuts down gracefully, or throws when the group is cancelled: stopping either way.
        try? await gracefulShutdown()
        notifier.notify(.stopping, .status("stopping"), logger: logger)
    }
}
