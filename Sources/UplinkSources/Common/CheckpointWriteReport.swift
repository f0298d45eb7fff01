import Logging

/// What the log is told about the writes of a source's checkpoint file: the first failure (the write is retried at
/// every checkpoint interval without a warning each time) and the first success after failures.
struct CheckpointWriteReport {
    private var failing = false

    /// Records the outcome of one write of `path` (`error` nil: written) for the source kind `kind` (`tail`, …).
    mutating func record(_ error: SourceFiles.Errno?, path: String, kind: String, logger: Logger) {
        if let error {
            guard !failing else { return }
            failing = true
            logger.warning("\(kind) source: cannot write the checkpoint file \(path): \(error); retrying")
        } else if failing {
            failing = false
            logger.info("\(kind) source: the checkpoint file \(path) is written again")
        }
    }
}
