import Metrics
import Synchronization
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport

/// The agent's remote configuration download counters (docs/metrics.md): `uplink_remote_config_downloads_total`
/// by result, and `uplink_remote_config_download_bytes_total`. A blob already on disk is not a download and is not
/// counted.
public struct RemoteConfigDownloadMetrics: Sendable {
    /// How one blob download ended (the `result` label).
    public enum Outcome: String, Sendable, CaseIterable {
        /// Fetched from byte 0 and in place.
        case complete
        /// A `.part` left by an earlier attempt was resumed (`Range` answered `206`) and the blob is in place.
        case resumed
        /// The collector answered a `Range` request with the whole blob (`200`): started over, and in place.
        case restarted
        /// Not in place: a cut or refused connection, a timeout, a status, a hash mismatch, a body too long (the
        /// `.part` is kept or discarded as `BlobDownloadFailure` says). A download the agent's stop cancelled is not
        /// counted.
        case failed
    }

    private let downloads: [Outcome: Counter]
    private let bytes: Counter

    /// The counters, made with `factory` (by default swift-metrics' backend: the process's `/metrics`).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        var downloads: [Outcome: Counter] = [:]
        for result in Outcome.allCases {
            downloads[result] = Counter(
                label: "uplink_remote_config_downloads_total", dimensions: [("result", result.rawValue)], factory: factory)
        }
        self.downloads = downloads
        bytes = Counter(label: "uplink_remote_config_download_bytes_total", dimensions: [], factory: factory)
    }

    /// Counts one blob download that ended as `result`.
    func count(_ result: Outcome) {
        downloads[result]?.increment()
    }

    /// Counts body bytes written to `.part` files.
    func count(bytes count: Int) {
        if count > 0 { bytes.increment(by: count) }
    }
}

extension RemoteConfigStore {
    /// Why the set a manifest names is not on disk.
    public enum DownloadFailure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The manifest lists a document larger than `remote_config.max_document_bytes`: nothing was downloaded.
        case documentTooLarge(name: String, size: Int, limit: Int)
        /// The manifest lists an envelope larger than `ConfigEnvelope.maximumBytes`: nothing was downloaded.
        case envelopeTooLarge(name: String, size: Int)
        /// A blob could not be downloaded (its `.part` is kept or not as `BlobDownloadFailure` says).
        case blob(name: String, part: DocumentSet.Part, BlobDownloadFailure)
        /// The downloads are there but are not the set (changed on disk meanwhile, or an envelope that does not parse).
        case invalidSet(DocumentSet.Invalid)
        /// `checkEnvelope` refused a document from its envelope (or its lack of one): no document was downloaded.
        case refused(EnvelopeRefusal)

        public var description: String {
            switch self {
            case .documentTooLarge(let name, let size, let limit):
                "document '\(name)' is \(size) bytes, more than remote_config.max_document_bytes (\(limit))"
            case .envelopeTooLarge(let name, let size):
                "the envelope of '\(name)' is \(size) bytes, more than \(ConfigEnvelope.maximumBytes)"
            case .blob(let name, let part, let failure):
                "\(part == .document ? "document" : "the envelope of") '\(name)': \(failure)"
            case .invalidSet(let invalid):
                invalid.description
            case .refused(let refusal):
                refusal.reason
            }
        }
    }

    /// Why `checkEnvelope` refused a document before it was downloaded.
    public struct EnvelopeRefusal: Sendable, Equatable {
        public var reason: String
        /// Whether the same envelope would be refused again under the same local file (see
        /// `RemoteConfigAgent.Refusal.isLasting`).
        public var isLasting: Bool

        public init(reason: String, isLasting: Bool = true) {
            self.reason = reason
            self.isLasting = isLasting
        }
    }

    /// Downloads every document and envelope `manifest` names into `blobs/` with `client` (one at a time; each
    /// resumes its `.part`; blobs already there are not fetched again), after removing every other download (a
    /// `.part` of an earlier manifest is of no use), and reads the set back, checked against the manifest.
    ///
    /// Sizes are checked before anything is fetched: a document above `maximumDocumentBytes` or an envelope above
    /// `ConfigEnvelope.maximumBytes` fails the whole set. The envelopes come first: `checkEnvelope` sees each (nil
    /// for a document listed without one) with the manifest's entry for its document, and a refusal fails the set
    /// before any document is fetched, so a collector without the signing key can make a box fetch envelopes only.
    /// Nothing here applies anything.
    ///
    /// - Parameters:
    ///   - metrics: Where each blob download and the bytes received are counted.
    ///   - progress: the bytes on disk of all the set's blobs, of their total, after each part written.
    public func download(
        _ manifest: ConfigManifest, with client: RemoteConfigClient, maximumDocumentBytes: Int,
        metrics: RemoteConfigDownloadMetrics = RemoteConfigDownloadMetrics(),
        checkEnvelope: (_ name: String, _ document: ConfigManifest.Blob, _ envelope: [UInt8]?) -> EnvelopeRefusal? = { _, _, _ in nil },
        progress: (@Sendable (BlobProgress) -> Void)? = nil
    ) async throws(DownloadFailure) -> DocumentSet {
        for document in manifest.documents {
            guard document.size <= maximumDocumentBytes else {
                throw .documentTooLarge(name: document.name, size: document.size, limit: maximumDocumentBytes)
            }
            if let envelope = document.envelope, envelope.size > ConfigEnvelope.maximumBytes {
                throw .envelopeTooLarge(name: document.name, size: envelope.size)
            }
        }
        let blobs = Set(manifest.blobs.map(\.sha256))
        await BlockingFileWork.run { self.pruneBlobs(keeping: blobs) }

        // The envelopes, each checked as it arrives, then the documents.
        // Each with the document an envelope signs (nil for a document).
        let envelopes = manifest.documents.compactMap { document in
            document.envelope.map { (document.name, DocumentSet.Part.envelope, $0, Optional(document.blob)) }
        }
        let documents = manifest.documents.map { ($0.name, DocumentSet.Part.document, $0.blob, nil as ConfigManifest.Blob?) }
        let total = (envelopes + documents).reduce(0) { $0 + $1.2.size }
        for document in manifest.documents where document.envelope == nil {
            if let refusal = checkEnvelope(document.name, document.blob, nil) { throw .refused(refusal) }
        }
        var done = 0
        for (name, part, blob, signedDocument) in envelopes + documents {
            let digest = blob.sha256
            let size = blob.size
            let before = done
            // The bytes written to the `.part`: what each report adds to the one before (the first report is what
            // was on disk already; a restart reports 0 and counts up again).
            let written = Mutex<(last: Int?, total: Int)>((nil, 0))
            let result: Result<BlobDownload, BlobDownloadFailure>
            do throws(BlobDownloadFailure) {
                result = .success(try await client.downloadBlob(digest, size: size, into: blobsDirectory) { progressed in
                    written.withLock { written in
                        if let last = written.last, progressed.bytesWritten > last {
                            written.total += progressed.bytesWritten - last
                        }
                        written.last = progressed.bytesWritten
                    }
                    progress?(BlobProgress(bytesWritten: before + progressed.bytesWritten, totalBytes: total))
                })
            } catch {
                result = .failure(error)
            }
            metrics.count(bytes: written.withLock { $0.total })
            switch result {
            case .success(let download) where download.wasPresent:
                break
            case .success(let download):
                metrics.count(download.restarted ? .restarted : download.resumedAt > 0 ? .resumed : .complete)
            case .failure(.cancelled):
                throw .blob(name: name, part: part, .cancelled)
            case .failure(let failure):
                metrics.count(.failed)
                throw .blob(name: name, part: part, failure)
            }
            done += size
            guard let signedDocument else { continue }
            let envelope = await BlockingFileWork.run { self.readBlob(digest, size: size) }
            switch envelope {
            case .valid(let bytes):
                if let refusal = checkEnvelope(name, signedDocument, bytes) { throw .refused(refusal) }
            case .absent, .invalid:
                // Gone or changed on disk since it was fetched: the set is read back below and found so.
                break
            }
        }
        do throws(DocumentSet.Invalid) {
            return try await BlockingFileWork.run { () throws(DocumentSet.Invalid) in
                try DocumentSet(manifest: manifest, blobsIn: self)
            }
        } catch {
            throw .invalidSet(error)
        }
    }
}
