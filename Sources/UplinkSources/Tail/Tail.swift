import Logging
import UplinkCore

/// The `tail` source: follows log files and sends every line as a log record, without losing or repeating lines
/// across rotations and agent restarts.
///
/// - Files are the expansion of `TailConfig.paths` minus `exclude`, found at start, on every
///   `discoveryInterval`, and at once with inotify when a watched directory changes. Only regular files.
/// - A file is identified by device, inode and a fingerprint of its first up to 256 bytes, so a new file that
///   reuses an inode is not mistaken for the old one.
/// - Every file incarnation (a file from its creation, or from a detected truncation) has a random origin id;
///   each record carries it with the offset just past its line, which lets the collector discard lines sent
///   again after a crash.
/// - Rotation by rename: the renamed file is read to its end through its open descriptor, then the new file at
///   the path from its start. Truncation (copytruncate): the file restarts at offset 0 as a new incarnation.
///   Deletion: the open descriptor is read to its end, then the file and its checkpoint are forgotten.
/// - Lines are sent with `emitWaitingForSpace`: while the buffer is full the source waits and reads nothing
///   (the file is the buffer). Checkpoints advance only to lines the collector acknowledged, and are written
///   to `<agent.state_dir>/tail/<name>.checkpoints` (see `TailCheckpointFile`; a few moved files among many go
///   to its changes file, `TailCheckpointChanges`).
/// - Cancellation stops reading, waits up to 5 seconds for the acknowledgement of the last line sent, writes
///   the final checkpoints and returns.
///
/// The source's name also names its checkpoint file; its clock is what the tailer's timeouts, intervals and
/// `uplink.linger` budget are measured on and waited out with. It throws a `SourceError` before reading anything
/// when the multi-line pattern is invalid or the checkpoint directory cannot be created.
public typealias TailSource = ConfiguredSource<TailConfig>

extension TailConfig: LogReaderConfig {
    typealias Engine = TailEngine
}

/// Counts of what a tail source did, logged at shutdown.
struct TailStatistics: Sendable, Equatable {
    /// Records handed to the sink (after multi-line joining).
    var records = 0
    /// Bytes read from files.
    var bytesRead: UInt64 = 0
    /// Lines cut to `max_line_bytes`.
    var truncatedLines = 0
    /// Records refused by the sink as larger than the whole buffer.
    var rejectedOversize = 0
    /// Files restarted from 0 because they were truncated.
    var truncations = 0
    /// Truncated files whose unread end was read from the copy `copytruncate` left.
    var copiesFinished = 0
    /// New files found at a path that had one (rotation, re-creation).
    var rotations = 0
    /// Files opened.
    var filesOpened = 0
    /// Reads done by the inotify handler while the task waited (`TailEngine.readInPlace`).
    var readsInPlace = 0
    /// Paths not followed because the real path of the file there is outside `TailConfig.allowedRealPaths`.
    var refusedOutsideAllowedPaths = 0
}
