import NIOCore
import NIOSSL

/// The TLS context of a stream's connections, kept from one connection to the next and made again only when
/// `uplink.tls`'s settings or files changed (`TLSReloader` hands over a new configuration then). A context is made in
/// a task of its own, not on the stream's loop (making one reads the trust store) and not on NIO's thread pool, where
/// it could wait behind checkpoint `fsync`s on a slow disk. Lives on the driver's loop.
final class StreamTLSContexts {
    /// The protocols the client offers through ALPN, preferred first: HTTP/2 where the collector or the proxy in
    /// front of it speaks it, HTTP/1.1 otherwise.
    static let applicationProtocols = ["h2", "http/1.1"]

    private var last: (configuration: TLSConfiguration, context: NIOSSLContext)?

    /// The context for `configuration`; completes on `loop`.
    func context(for configuration: TLSConfiguration, on loop: any EventLoop) -> EventLoopFuture<NIOSSLContext> {
        if let last, last.configuration.bestEffortEquals(configuration) {
            return loop.makeSucceededFuture(last.context)
        }
        var offered = configuration
        offered.applicationProtocols = Self.applicationProtocols
        let made = loop.makePromise(of: NIOSSLContext.self)
        made.completeWithTask { [offered] in try NIOSSLContext(configuration: offered) }
        return made.futureResult.assumeIsolated().map { context in
            self.last = (configuration, context)
            return context
        }.nonisolated()
    }
}
