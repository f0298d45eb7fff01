import Foundation
import Synchronization

/// A free loopback port (bind to 0, read it, release it).
public enum FreePort {
    /// Ports `pick()` handed out in this test run: never handed out again, since the test that got one may bind it
    /// only seconds later (a process it starts), and parallel suites pick many.
    private static let pickedPorts = Mutex<Set<Int>>([])

    public static func pick() throws -> Int {
        for _ in 0..<16 {
            let reservation = try reserve()
            defer { reservation.release() }
            if pickedPorts.withLock({ $0.insert(reservation.port).inserted }) { return reservation.port }
        }
        throw POSIXError(.EADDRINUSE)
    }

    /// A loopback port held bound (not listening) until `release()`: connecting to it is refused, and no other
    /// socket in the test run is given it meanwhile (a server binding port 0 could be, once `pick()` let it go).
    ///
    /// The port lies below the kernel's ephemeral range, so after `release()` neither a server binding port 0 nor a
    /// client's `connect` can be given it: a client retrying against the port in the moment between `release()` and
    /// the server's `bind` would otherwise, rarely, get it as its own source port and connect to itself, and the
    /// server's `bind` would fail. (Port 0 is used when no such port is free.)
    public static func reserve() throws -> PortReservation {
        let below = ephemeralRangeStart()
        if below > 10_001 {
            for _ in 0..<64 {
                let port = UInt16.random(in: 10_000..<UInt16(below))
                if pickedPorts.withLock({ $0.contains(Int(port)) }) { continue }
                if let reservation = bind(port: port) { return reservation }
            }
        }
        guard let reservation = bind(port: 0) else { throw POSIXError(.EADDRINUSE) }
        return reservation
    }

    /// The first port of `net.ipv4.ip_local_port_range` (Linux's default 32768 when it cannot be read).
    private static func ephemeralRangeStart() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32768
    }

    /// A socket bound to 127.0.0.1:`port` (0: one the kernel picks), or nil when the port is taken.
    ///
    /// Close-on-exec: a child this process starts while the port is reserved (an in-process agent's `exec` source
    /// spawns its commands without closing what they inherit) must not keep the port bound after `release()`; a
    /// collector then failed to bind it ("Address already in use") once in a full run.
    private static func bind(port: UInt16) -> PortReservation? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0
            }
        }
        guard bound else {
            close(socketFD)
            return nil
        }
        return PortReservation(port: Int(UInt16(bigEndian: address.sin_port)), descriptor: socketFD)
    }
}

/// A port kept bound by `FreePort.reserve()`.
public final class PortReservation: Sendable {
    public let port: Int
    private let descriptor: Mutex<Int32?>

    init(port: Int, descriptor: Int32) {
        self.port = port
        self.descriptor = Mutex(descriptor)
    }

    /// Lets the port go (right before the server that takes it binds); later calls do nothing.
    public func release() {
        descriptor.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    deinit { release() }
}
