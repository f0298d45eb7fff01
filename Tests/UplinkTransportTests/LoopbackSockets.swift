#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Raw loopback sockets for the reconnect tests: a listener that never completes a connect (a port that refuses is
/// `FreePort.pick()`).
enum LoopbackSockets {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ call: String) { description = "\(call) failed: errno \(errno)" }
    }

    /// A TCP listener on 127.0.0.1 whose accept queue is full, so the kernel drops every further SYN and a connect to
    /// it never completes. `listen(fd, 0)` admits one connection that nobody accepts; once the queue holds it (read
    /// back with `TCP_INFO`, which reports a listener's queue length in `tcpi_unacked`), SYNs are dropped.
    final class BlackHole {
        let port: Int
        private let listener: Int32
        private let filler: Int32

        init() throws {
            listener = try boundSocket()
            guard listen(listener, 0) == 0 else {
                close(listener)
                throw Failure("listen")
            }
            port = try LoopbackSockets.port(of: listener)
            filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = loopbackAddress(port: port)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(filler)
                close(listener)
                throw Failure("connect (filler)")
            }
        }

        deinit {
            close(filler)
            close(listener)
        }

        /// Connections queued on the listener and the queue's limit (`tcpi_unacked`, `tcpi_sacked` of a listener).
        func acceptQueue() -> (length: Int, limit: Int) {
            var info = tcp_info()
            var size = socklen_t(MemoryLayout<tcp_info>.size)
            guard getsockopt(listener, Int32(IPPROTO_TCP), TCP_INFO, &info, &size) == 0 else { return (0, 0) }
            return (Int(info.tcpi_unacked), Int(info.tcpi_sacked))
        }

        /// Whether the queue is full, so a further SYN is dropped.
        var isFull: Bool {
            let queue = acceptQueue()
            return queue.length > queue.limit
        }
    }

    /// A TCP listener on 127.0.0.1 that never accepts and never reads: the kernel completes the TCP handshake (the
    /// connection waits in the accept queue), but nothing ever answers, e.g. a TLS ClientHello.
    final class Silent {
        let port: Int
        private let listener: Int32

        init() throws {
            listener = try boundSocket()
            guard listen(listener, 16) == 0 else {
                close(listener)
                throw Failure("listen")
            }
            port = try LoopbackSockets.port(of: listener)
        }

        deinit {
            close(listener)
        }
    }

    private static func boundSocket() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket") }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(descriptor)
            throw Failure("bind")
        }
        return descriptor
    }

    private static func port(of descriptor: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw Failure("getsockname") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
