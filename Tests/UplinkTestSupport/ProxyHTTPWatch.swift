import NIOCore

/// What ``FaultProxy/alterResponse(toRequestContaining:_:)`` does to the response of one HTTP/1.1 request.
public enum ProxyResponseAlteration: Sendable, Equatable {
    /// Forwards the response head and the body up to byte `offset` of the whole resource (exclusive; a `206`'s
    /// body starts where its `Content-Range` says), then cuts the connection (orderly, both sides): a download cut
    /// there, wherever the client resumed from.
    case cutAtResourceOffset(Int)
    /// Flips the lowest bit of body byte `index` (counted from 0); the rest passes unchanged.
    case flipBodyByte(Int)
    /// Answers `200` without a length instead of upstream's response, then a body that never ends (as fast as the
    /// client reads) until the client closes the connection.
    case endlessBody
}

/// Reads the client's bytes of an HTTP/1.1 connection as they pass the proxy and returns each request head whole.
/// Bodies are skipped by `Content-Length`; a body of unknown length (chunked: the agent's stream, which never ends)
/// ends the watch on that connection, as does anything that is not HTTP/1.1.
struct HTTPRequestHeadScanner {
    /// A head longer than this is not one: the watch ends.
    static let maximumHeadBytes = 64 * 1024
    private var head: [UInt8] = []
    private var bodyRemaining = 0
    private var finished = false

    /// The request heads completed by `buffer`, as text (request line and header lines, without the blank line).
    mutating func consume(_ buffer: ByteBuffer) -> [String] {
        guard !finished else { return [] }
        var heads: [String] = []
        for byte in buffer.readableBytesView {
            if finished { break }
            if bodyRemaining > 0 {
                bodyRemaining -= 1
                continue
            }
            head.append(byte)
            guard head.count >= 4, head.suffix(4).elementsEqual("\r\n\r\n".utf8) else {
                if head.count > Self.maximumHeadBytes { finished = true }
                continue
            }
            let text = String(decoding: head.dropLast(4), as: UTF8.self)
            head = []
            heads.append(text)
            for line in text.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                switch parts[0].lowercased() {
                case "content-length": bodyRemaining = Int(parts[1].drop { $0 == " " || $0 == "\t" }) ?? 0
                case "transfer-encoding": finished = true
                default: break
                }
            }
        }
        return heads
    }
}

/// Applies one ``ProxyResponseAlteration`` to the upstream's bytes of the response it is armed for: finds the end of
/// the response head, then counts body bytes.
struct ResponseAlterationProgress {
    let alteration: ProxyResponseAlteration
    private var head: [UInt8] = []
    private var inBody = false
    private var bodySeen = 0
    /// Where the body starts in the resource (`Content-Range: bytes N-…`), once the head is read.
    private var bodyStart = 0

    init(_ alteration: ProxyResponseAlteration) {
        self.alteration = alteration
    }

    /// What to do with `buffer` (changed in place for a flip): forward it whole (`nil`), or forward its first `n`
    /// bytes and cut (`n`). `done` once the alteration has nothing more to do on this response.
    mutating func apply(to buffer: inout ByteBuffer) -> (cutAfter: Int?, done: Bool) {
        let start = buffer.readerIndex
        for offset in 0..<buffer.readableBytes {
            if !inBody {
                head.append(buffer.getInteger(at: start + offset, as: UInt8.self)!)
                guard head.count >= 4, head.suffix(4).elementsEqual("\r\n\r\n".utf8) else { continue }
                inBody = true
                bodyStart = Self.rangeStart(String(decoding: head, as: UTF8.self)) ?? 0
                if case .cutAtResourceOffset(let cut) = alteration, cut <= bodyStart { return (offset + 1, true) }
                continue
            }
            switch alteration {
            case .cutAtResourceOffset(let cut):
                bodySeen += 1
                if bodyStart + bodySeen == cut { return (offset + 1, true) }
            case .flipBodyByte(let index):
                if bodySeen == index {
                    let byte = buffer.getInteger(at: start + offset, as: UInt8.self)!
                    buffer.setInteger(byte ^ 0x01, at: start + offset)
                    return (nil, true)
                }
                bodySeen += 1
            case .endlessBody:
                return (nil, true)  // `ProxyConnection` answers in upstream's place
            }
        }
        return (nil, false)
    }

    /// `N` of a `Content-Range: bytes N-M/T` header in `head`.
    static func rangeStart(_ head: String) -> Int? {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-range:") {
            let value = line.dropFirst("content-range:".count).drop { $0 == " " }
            guard value.hasPrefix("bytes ") else { return nil }
            return Int(value.dropFirst("bytes ".count).prefix { $0.isNumber })
        }
        return nil
    }
}
