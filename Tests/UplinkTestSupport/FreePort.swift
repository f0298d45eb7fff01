import Foundation
import Synchronization

/// A free loopback port (bind to 0, read it, release it).
public enum FreePort {
    public static func pick() throws -> Int {
        let reservation = try reserve()
        defer { reservation.release() }
        return reservation.port
    }

    /// A loopback port held bound (not listening) until `release()`: connecting to it is refused, and no other
    /// socket in the test run is given it meanwhile (a server binding port 0 could be, once `pick()` let it go).
    public static func reserve() throws -> PortReservation {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) == 0 && getsockname(socketFD, $0, &length) == 0 }
        }
        guard bound else {
            close(socketFD)
            throw POSIXError(.EADDRINUSE)
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
