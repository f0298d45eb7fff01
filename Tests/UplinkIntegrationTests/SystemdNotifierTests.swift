import Foundation
import Logging
import ServiceLifecycle
import Testing
import UplinkAgent

#if canImport(Glibc)
import Glibc
import UplinkTestSupport
#endif

/// `SystemdNotifier` against a real `AF_UNIX` datagram socket standing in for systemd's `$NOTIFY_SOCKET`.
@Suite("systemd readiness notifications", .serialized, .timeLimit(.minutes(2)))
struct SystemdNotifierTests {
    @Test("READY=1, STATUS and STOPPING=1 arrive at a socket path as one datagram each")
    func pathSocket() throws {
        let directory = try Harness.temporaryDirectory("notify")
        let socket = try NotifySocket(path: directory + "/notify.sock")
        let notifier = SystemdNotifier(socketPath: socket.name)
        #expect(notifier.isEnabled)

        try notifier.notify(.ready, .status("streaming 2 sources\nto somewhere"))
        try notifier.notify(.stopping)
        #expect(socket.receive() == "READY=1\nSTATUS=streaming 2 sources to somewhere")
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test("an abstract socket name (@…) is used without the @ and without a trailing NUL")
    func abstractSocket() throws {
        let socket = try NotifySocket(path: "@uplink-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try SystemdNotifier(socketPath: socket.name).notify(.ready)
        #expect(socket.receive() == "READY=1")
    }

    @Test("without NOTIFY_SOCKET nothing is sent and nothing fails")
    func disabled() throws {
        #expect(!SystemdNotifier(socketPath: nil).isEnabled)
        #expect(!SystemdNotifier(socketPath: "").isEnabled)
        try SystemdNotifier(socketPath: nil).notify(.ready)
    }

    @Test("bad addresses are reported with a stable code")
    func badAddresses() throws {
        #expect(throws: SystemdNotifier.Error.self) { try SystemdNotifier(socketPath: "relative/path").notify(.ready) }
        let long = "/" + String(repeating: "x", count: 200)
        do throws(SystemdNotifier.Error) {
            try SystemdNotifier(socketPath: long).notify(.ready)
            Issue.record("a 201-byte path was accepted")
        } catch {
            #expect(error.code == "address_too_long")
        }
        let directory = try Harness.temporaryDirectory("notify-gone")
        do throws(SystemdNotifier.Error) {
            try SystemdNotifier(socketPath: directory + "/nobody-listens.sock").notify(.ready)
            Issue.record("sending to a missing socket succeeded")
        } catch {
            #expect(error.code == "send")
        }
    }

    @Test("the service sends READY=1 once ready, then STOPPING=1 when the group shuts down gracefully")
    func service() async throws {
        let directory = try Harness.temporaryDirectory("notify-service")
        let socket = try NotifySocket(path: directory + "/notify.sock")
        let notifier = SystemdNotifierService(
            notifier: SystemdNotifier(socketPath: socket.name), logger: Logger(label: "test")
        ) {
            try await Task.sleep(for: .milliseconds(50))
            return "up"
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: Idle()), notifier.serviceConfiguration], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        #expect(await eventually(timeout: .seconds(10)) { socket.pending.contains("READY=1\nSTATUS=up") })
        #expect(!socket.pending.contains { $0.contains("STOPPING=1") })
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(await eventually(timeout: .seconds(10)) { socket.pending.last == "STOPPING=1\nSTATUS=stopping" })
    }

    @Test("uplink run --config examples.yaml sends READY=1 once running and STOPPING=1 on SIGTERM")
    func runCommand() async throws {
        let directory = try Harness.temporaryDirectory("notify-run")
        let socket = try NotifySocket(path: directory + "/notify.sock")
        let (process, log) = try UplinkBinary.start(
            ["run", "--config", CommandLineTests.examples], environment: ["NOTIFY_SOCKET": socket.name], in: directory)
        defer { if process.isRunning { process.terminate() } }

        let ready = await eventually(timeout: .seconds(30)) {
            socket.pending.contains { $0.hasPrefix("READY=1\n") }
        }
        #expect(ready, "no READY=1; log: \(log.text.suffix(1000))")
        // The status names the source count, whatever examples.yaml holds today.
        let status = socket.pending.first ?? ""
        #expect(status.hasPrefix("READY=1\nSTATUS=streaming ") && status.contains(" sources to the embedded collector"))
        #expect(!socket.pending.contains { $0.contains("STOPPING=1") })

        kill(process.processIdentifier, SIGTERM)
        let stopping = await eventually(timeout: .seconds(20)) {
            socket.pending.contains { $0.hasPrefix("STOPPING=1") }
        }
        #expect(stopping, "no STOPPING=1; log: \(log.text.suffix(1000))")
        #expect(await eventually(timeout: .seconds(20)) { !process.isRunning })
        await process.awaitExit()
        #expect(process.terminationStatus == 0)
    }
}

/// A service that idles until graceful shutdown.
private struct Idle: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}

/// A bound `AF_UNIX` datagram socket standing in for systemd's notification socket.
final class NotifySocket: @unchecked Sendable {
    /// The name to put in `$NOTIFY_SOCKET`: a path, or `@name` for an abstract socket.
    let name: String
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [String] = []

    init(path: String) throws {
        struct Failure: Error, CustomStringConvertible { let description: String }
        name = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            close(descriptor)
            throw Failure(description: "bind \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(descriptor)
        if !name.hasPrefix("@") { unlink(name) }
    }

    /// Every datagram received so far (reads what is waiting without blocking).
    var pending: [String] {
        lock.lock()
        defer { lock.unlock() }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            guard count >= 0 else { break }
            received.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
        return received
    }

    /// The next datagram not yet returned by `receive()`, or nil if none is waiting.
    func receive() -> String? {
        _ = pending
        lock.lock()
        defer { lock.unlock() }
        guard consumed < received.count else { return nil }
        defer { consumed += 1 }
        return received[consumed]
    }

    private var consumed = 0
}
