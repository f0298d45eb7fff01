import Logging
import UplinkCore

/// The `journald` source: reads the systemd journal through libsystemd's sd-journal and sends every entry as a log
/// record, without losing or repeating entries across agent restarts.
///
/// - The journal is the local system journal, or the `*.journal` files of `JournaldConfig.directory`. `units`,
///   `matches` and `priority` become sd-journal matches, so entries that do not match are never read.
/// - Following: sd-journal's inotify descriptor wakes the source when the journal changes (entries appended, files
///   added, rotated or vacuumed); no polling while idle.
/// - Entries are sent with `emitWaitingForSpace`: while the buffer is full the source reads nothing (the journal is
///   the buffer). The cursor of the last entry the collector acknowledged is the checkpoint, written to
///   `<agent.state_dir>/journald/<name>.cursor` (see `JournaldCheckpointFile`); a restart resumes after it.
/// - Every record carries an origin (docs/protocol.md, "Origins"): the journal's sequence-number id (hashed) and
///   the entry's sequence number, so entries sent again after a crash (sent and stored, not yet checkpointed) are
///   discarded by the collector.
/// - Cancellation stops reading, waits up to 5 seconds for the acknowledgement of the last entry sent, writes the
///   final checkpoint and returns.
///
/// The source's name also names its checkpoint file; its clock is what the checkpoint interval and the read-error
/// retry are measured on and waited out with. It throws a `SourceError` before reading anything when the journal
/// cannot be opened or the checkpoint directory cannot be created.
public typealias JournaldSource = ConfiguredSource<JournaldConfig>

extension JournaldConfig: LogReaderConfig {
    typealias Engine = JournaldEngine
}

/// Counts of what a journald source did, logged at shutdown.
struct JournaldStatistics: Sendable, Equatable {
    /// Entries handed to the sink.
    var records = 0
    /// Messages cut to `max_line_bytes`.
    var truncatedMessages = 0
    /// Records refused by the sink as larger than the whole buffer.
    var rejectedOversize = 0
    /// Times the journal's files changed (added, rotated, removed).
    var invalidations = 0
    /// Errors reading the journal (a corrupt file, an I/O error).
    var readErrors = 0
}
