import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// First handler of the listening socket's pipeline: gets the collector out of a file-descriptor shortage without
/// spinning.
///
/// When `accept` fails with EMFILE, NIO's `AcceptBackoffHandler` (which the bootstrap installs) pauses the reads it
/// is asked for, but the socket stays registered for readability while the pending connection sits in the kernel's
/// queue, so the event loop wakes up at once, calls `accept` again, fails again: 100 % CPU, and nothing else gets
/// served. This handler keeps one spare descriptor (to `/dev/null`); on EMFILE or ENFILE it logs (rate-limited),
/// closes the spare, lets the next `accept` take that descriptor and closes the connection at once (it is shed,
/// and counted), then opens the spare again (connections accepted before it is back are shed too). The successful
/// `accept` ends the wake-ups, and the backoff handler's pause (1 s) then applies. libuv does the same
/// (`uv__emfile_trick`).
final class AcceptGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let edge: EdgeRecorder
    private let limiter: LogRateLimiter
    private let logger: Logger
    private var spare: Int32
    private var shedding = false

    init(edge: EdgeRecorder, limiter: LogRateLimiter, logger: Logger) {
        self.edge = edge
        self.limiter = limiter
        self.logger = logger
        self.spare = Self.openSpare()
    }

    deinit {
        if spare >= 0 { close(spare) }
    }

    private static func openSpare() -> Int32 {
        open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let code = (error as? IOError)?.errnoCode, code == EMFILE || code == ENFILE {
            edge.record(.acceptFailure)
            limiter.log(
                logger, .warning, kind: "accept-emfile",
                "Cannot accept connections: out of file descriptors; shedding one connection and pausing accepts for 1 s",
                metadata: [
                    "error": "\(code == EMFILE ? "EMFILE" : "ENFILE")",
                    "hint": "raise LimitNOFILE (see docs/deploy.md) or lower collector.max_streams",
                ])
            if spare >= 0 {
                close(spare)
                spare = -1
                shedding = true
            }
        }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard shedding else {
            context.fireChannelRead(data)
            return
        }
        // This connection got a descriptor only because the spare was given up: close it, and take the descriptor
        // back for the spare before the next accept can. Until the spare is back, every accepted connection is
        // shed, since each would hold the descriptor the spare needs.
        edge.record(.connectionShed)
        let child = unwrapInboundIn(data)
        child.close(promise: nil)
        reopenSpare()
        if shedding {
            // The child lives on another event loop: its descriptor is released there, a little later.
            let guardOnLoop = NIOLoopBound(self, eventLoop: context.eventLoop)
            child.closeFuture.whenComplete { _ in
                guardOnLoop.eventLoop.execute { guardOnLoop.value.reopenSpare() }
            }
        }
    }

    private func reopenSpare() {
        guard shedding else { return }
        spare = Self.openSpare()
        if spare >= 0 { shedding = false }
    }
}
