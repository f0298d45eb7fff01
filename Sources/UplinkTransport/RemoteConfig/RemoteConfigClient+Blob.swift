import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import UplinkFiles
import UplinkRemoteConfig

/// How far a blob download is, download-task style: bytes in the `.part` file so far, of the blob's size.
public struct BlobProgress: Sendable, Equatable {
    /// Bytes of the blob on disk (a resumed download starts at the `.part` file's length).
    public var bytesWritten: Int
    /// The blob's size.
    public var totalBytes: Int

    public init(bytesWritten: Int, totalBytes: Int) {
        self.bytesWritten = bytesWritten
        self.totalBytes = totalBytes
    }
}

/// A blob that is in place, verified: `<dir>/<hex>`.
public struct BlobDownload: Sendable, Equatable {
    /// `<dir>/<hex>`.
    public var path: String
    /// No request was needed: the blob was there already (or a whole `.part` only had to be moved into place).
    public var wasPresent: Bool
    /// The `.part` length the download resumed at (`Range: bytes=N-` answered `206`); 0 when it started at byte 0.
    public var resumedAt: Int
    /// The collector answered a `Range` request with the whole blob (`200`): the `.part` was started over.
    public var restarted: Bool
    /// Body bytes received in this call.
    public var bytesReceived: Int

    public init(path: String, wasPresent: Bool, resumedAt: Int, restarted: Bool, bytesReceived: Int) {
        self.path = path
        self.wasPresent = wasPresent
        self.resumedAt = resumedAt
        self.restarted = restarted
        self.bytesReceived = bytesReceived
    }
}

/// Why a blob is not in place. Whether the `.part` file is kept for the next attempt is part of each case.
public enum BlobDownloadFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No usable answer (no connection, a timeout, the connection cut mid-body). `.part` kept.
    case transport(String)
    /// The body ended before the blob's size. `.part` kept.
    case incomplete(received: Int, expected: Int)
    /// The task was cancelled. `.part` kept.
    case cancelled
    /// A status other than `200` (or `206` to a `Range` request). `.part` kept, except after `416`.
    case status(Int)
    /// `206` with a `Content-Range` that is not `bytes <part length>-<size − 1>/<size>`. `.part` discarded.
    case unexpectedContentRange(String?)
    /// `Content-Length` announced a length other than the blob's. `.part` discarded.
    case unexpectedLength(announced: Int, expected: Int)
    /// The body went on past the blob's size; it was given up on at once. `.part` discarded.
    case tooLarge(limit: Int)
    /// The bytes are not the blob's. `.part` discarded, nothing moved into place.
    case hashMismatch(expected: SHA256Digest, actual: SHA256Digest)
    /// A local file operation failed.
    case file(FileError)

    public var description: String {
        switch self {
        case .transport(let text): text
        case .incomplete(let received, let expected): "the body ended after \(received) of \(expected) bytes"
        case .cancelled: "cancelled"
        case .status(let code): "the collector answered \(code)"
        case .unexpectedContentRange(let header): "206 with Content-Range \(header.map { "'\($0)'" } ?? "missing"), not the range asked for"
        case .unexpectedLength(let announced, let expected): "Content-Length \(announced), the blob has \(expected) bytes"
        case .tooLarge(let limit): "the body is longer than the blob's \(limit) bytes"
        case .hashMismatch(let expected, let actual):
            "the bytes received hash to \(actual.hex.prefix(12))…, not \(expected.hex.prefix(12))… (discarded)"
        case .file(let error): "\(error)"
        }
    }
}

extension RemoteConfigClient {
    /// Downloads the blob `digest` of `size` bytes into `directory` (which must exist): into `<hex>.part` first, then,
    /// once its SHA-256 is right, renamed to `<hex>` (the `.part` and the directory flushed to disk).
    ///
    /// - A `<hex>` already there that hashes right is used as it is; one that does not is removed.
    /// - An existing `.part` is resumed: its bytes are hashed, and the request carries `Range: bytes=<length>-` and
    ///   `If-Range: "sha256:<hex>"`. `206` with the matching `Content-Range` appends; `200` starts over from byte 0;
    ///   any other status is a failure. A `.part` longer than `size` is emptied first.
    /// - The body is never read past `size`: the request is given up on as soon as a part would go beyond it.
    /// - A hash mismatch removes the `.part`; nothing is moved into place.
    /// - A cut connection, a timeout or a cancellation keeps the `.part` for the next call.
    ///
    /// One download per blob at a time: two concurrent calls for the same digest and directory would share the `.part`.
    ///
    /// - Parameter progress: called with the bytes on disk after each part written (and once at the start).
    public func downloadBlob(
        _ digest: SHA256Digest, size: Int, into directory: String,
        progress: (@Sendable (BlobProgress) -> Void)? = nil
    ) async throws(BlobDownloadFailure) -> BlobDownload {
        precondition(size >= 0, "a blob's size is not negative")
        let finalPath = BlobPartFile.finalPath(directory: directory, digest: digest)
        let start = try await BlockingFileWork.run { () throws(BlobDownloadFailure) in
            try BlobPartFile.start(directory: directory, digest: digest, size: size)
        }
        guard case .part(let file, let length, let prefixHasher) = start else {
            progress?(BlobProgress(bytesWritten: size, totalBytes: size))
            return BlobDownload(path: finalPath, wasPresent: true, resumedAt: 0, restarted: false, bytesReceived: 0)
        }
        progress?(BlobProgress(bytesWritten: length, totalBytes: size))
        let download: BlobDownload
        do throws(BlobDownloadFailure) {
            download = try await receiveWithinDeadline(
                digest, size: size, into: file, length: length, hasher: prefixHasher, progress: progress)
        } catch {
            switch error {
            case .transport, .incomplete, .cancelled, .file:
                await BlockingFileWork.run { file.keep() }
            case .status(let code) where code != 416:
                await BlockingFileWork.run { file.keep() }
            case .status, .unexpectedContentRange, .unexpectedLength, .tooLarge, .hashMismatch:
                await BlockingFileWork.run { file.discard() }
            }
            throw error
        }
        // Closes the file whether it succeeds or not.
        try await BlockingFileWork.run { () throws(BlobDownloadFailure) in try file.moveIntoPlace() }
        return download
    }

    /// `receive` bounded by `timeouts.request`.
    private func receiveWithinDeadline(
        _ digest: SHA256Digest, size: Int, into file: BlobPartFile, length: Int, hasher: SHA256Hasher,
        progress: (@Sendable (BlobProgress) -> Void)?
    ) async throws(BlobDownloadFailure) -> BlobDownload {
        do {
            return try await withinRequestDeadline {
                try await self.receive(digest, size: size, into: file, length: length, hasher: hasher, progress: progress)
            }
        } catch let failure as BlobDownloadFailure {
            throw failure
        } catch is RequestDeadlineExceeded {
            throw .transport(RequestDeadlineExceeded.description(timeouts.request))
        } catch {
            throw .cancelled
        }
    }

    /// The request and its body, into the open `.part` that holds `length` bytes hashing to `hasher`'s state; returns
    /// once the whole blob is in the `.part` and hashes right (the caller moves it into place).
    private func receive(
        _ digest: SHA256Digest, size: Int, into file: BlobPartFile, length: Int, hasher prefixHasher: SHA256Hasher,
        progress: (@Sendable (BlobProgress) -> Void)?
    ) async throws(BlobDownloadFailure) -> BlobDownload {
        var headers = HTTPHeaders()
        if length > 0 {
            headers.add(name: "Range", value: "bytes=\(length)-")
            headers.add(name: "If-Range", value: "\"\(digest.prefixed)\"")
        }
        let response: HTTPClientResponse
        do {
            response = try await execute(path: "/v1/config/blobs/\(digest.prefixed)", headers: headers)
        } catch {
            throw Task.isCancelled ? .cancelled : .transport(error.description)
        }
        var offset = length
        var hasher = prefixHasher
        var restarted = false
        switch response.status.code {
        case 206 where length > 0:
            let header = response.headers.first(name: "Content-Range")
            guard let range = header.flatMap(ContentRange.init), range.first == length, range.last == size - 1,
                range.total == nil || range.total == size
            else { throw .unexpectedContentRange(header) }
        case 200:
            if length > 0 {
                logger.debug(
                    "remote config: the collector sent the whole blob instead of the rest; starting over",
                    metadata: ["blob": "\(digest.prefixed)", "part": "\(length)"])
                try file.truncate()
                offset = 0
                hasher = SHA256Hasher()
                restarted = true
                progress?(BlobProgress(bytesWritten: 0, totalBytes: size))
            }
        default:
            throw .status(Int(response.status.code))
        }
        let resumedAt = offset
        if let announced = response.headers.first(name: "Content-Length").flatMap({ Int($0) }), announced != size - offset {
            throw .unexpectedLength(announced: announced, expected: size - offset)
        }
        var received = 0
        do {
            for try await part in response.body {
                guard offset + part.readableBytes <= size else { throw BlobDownloadFailure.tooLarge(limit: size) }
                try part.withUnsafeReadableBytes { bytes throws(BlobDownloadFailure) in
                    try file.write(bytes, at: offset)
                    hasher.update(bytes)
                }
                offset += part.readableBytes
                received += part.readableBytes
                progress?(BlobProgress(bytesWritten: offset, totalBytes: size))
            }
        } catch let failure as BlobDownloadFailure {
            throw failure
        } catch {
            throw Task.isCancelled ? .cancelled : .transport("the blob's body: \(describe(error))")
        }
        guard offset == size else { throw .incomplete(received: offset, expected: size) }
        let actual = hasher.finalize()
        guard actual == digest else { throw .hashMismatch(expected: digest, actual: actual) }
        return BlobDownload(
            path: file.finalPath, wasPresent: false, resumedAt: resumedAt, restarted: restarted, bytesReceived: received)
    }
}

/// `Content-Range: bytes <first>-<last>/<total or *>`.
struct ContentRange: Equatable {
    var first: Int
    var last: Int
    var total: Int?

    init?(_ header: String) {
        guard header.hasPrefix("bytes ") else { return nil }
        let rest = header.dropFirst("bytes ".count)
        let halves = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first >= 0, last >= first else {
            return nil
        }
        self.first = first
        self.last = last
        if halves[1] == "*" {
            total = nil
        } else {
            guard let total = Int(halves[1]), total > last else { return nil }
            self.total = total
        }
    }
}
