import CSystemd
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The journal as sd-journal (libsystemd) reads it: one `sd_journal` handle, used by one task at a time (sd-journal
/// is not thread-safe, but may move between threads).
///
/// Every call returns sd-journal's result; negative values are `-errno`.
final class JournaldJournal {
    private let handle: OpaquePointer

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        uplink_sd_journal_close(handle)
    }

    /// Opens the `*.journal` files of `directory`, or, when nil, the local system journal. Fields are read whole
    /// (no data threshold), so the length of a long message is known.
    static func open(directory: String?) -> Result<JournaldJournal, SourceError> {
        if uplink_systemd_load() != 0 {
            let why = uplink_systemd_load_error().map { String(cString: $0) } ?? "unknown reason"
            return .failure(SourceError("cannot load libsystemd (\(why)); install libsystemd0"))
        }
        var handle: OpaquePointer?
        let result: Int32
        if let directory {
            result = uplink_sd_journal_open_directory(&handle, directory, 0)
        } else {
            result = uplink_sd_journal_open(&handle, Int32(SD_JOURNAL_LOCAL_ONLY))
        }
        guard result >= 0, let handle else {
            return .failure(SourceError("cannot open the journal\(directory.map { " in \($0)" } ?? ""): \(errorText(result))"))
        }
        _ = uplink_sd_journal_set_data_threshold(handle, 0)
        return .success(JournaldJournal(handle: handle))
    }

    /// The error text of a negative sd-journal result.
    static func errorText(_ result: Int32) -> String {
        FileError.text(errno: -result)
    }

    // MARK: Matches

    /// Adds `FIELD=value` (the same field again: either value; another field: both).
    func addMatch(_ match: [UInt8]) -> Int32 {
        match.withUnsafeBytes { uplink_sd_journal_add_match(handle, $0.baseAddress, $0.count) }
    }

    // MARK: Position

    func seekHead() -> Int32 { uplink_sd_journal_seek_head(handle) }
    func seekTail() -> Int32 { uplink_sd_journal_seek_tail(handle) }
    func seekRealtime(microseconds: UInt64) -> Int32 { uplink_sd_journal_seek_realtime_usec(handle, microseconds) }
    func seekCursor(_ cursor: String) -> Int32 { uplink_sd_journal_seek_cursor(handle, cursor) }
    /// Positive when the current entry is the one `cursor` names.
    func testCursor(_ cursor: String) -> Int32 { uplink_sd_journal_test_cursor(handle, cursor) }
    /// Moves to the next entry: 1, 0 at the end, or a negative error.
    func next() -> Int32 { uplink_sd_journal_next(handle) }
    func previous() -> Int32 { uplink_sd_journal_previous(handle) }

    // MARK: The current entry

    /// The current entry's cursor, as bytes without the terminating NUL (nil on error).
    func withCursor<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T? {
        var cursor: UnsafeMutablePointer<CChar>?
        guard uplink_sd_journal_get_cursor(handle, &cursor) >= 0, let cursor else { return nil }
        defer { free(cursor) }
        return body(UnsafeRawBufferPointer(start: cursor, count: strlen(cursor)))
    }

    /// When the journal received the current entry, in microseconds since the Unix epoch.
    func realtimeMicroseconds() -> UInt64? {
        var microseconds: UInt64 = 0
        return uplink_sd_journal_get_realtime_usec(handle, &microseconds) >= 0 ? microseconds : nil
    }

    /// Calls `body` with every field of the current entry as `NAME=value` bytes. Fields that cannot be read (a
    /// corrupt object) are skipped by sd-journal; returns false when the enumeration ended on an error.
    @discardableResult
    func forEachField(_ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        uplink_sd_journal_restart_data(handle)
        var data: UnsafeRawPointer?
        var length = 0
        while true {
            let result = uplink_sd_journal_enumerate_data(handle, &data, &length)
            if result == 0 { return true }
            // sd-journal skips field objects it cannot read itself; an error here ends the entry's fields (going on
            // could repeat the same error forever).
            if result < 0 { return false }
            if let data { body(UnsafeRawBufferPointer(start: data, count: length)) }
        }
    }

    // MARK: Following

    /// The descriptor that becomes readable when the journal changes (inotify).
    func descriptor() -> Int32 { uplink_sd_journal_get_fd(handle) }

    /// Takes the changes the descriptor signalled: `SD_JOURNAL_NOP`, `_APPEND`, `_INVALIDATE` (files added or
    /// removed), or a negative error.
    func process() -> Int32 { uplink_sd_journal_process(handle) }

    /// When sd-journal wants to be asked again even without an event (files it cannot watch with inotify), in
    /// microseconds of `CLOCK_MONOTONIC`; nil for never.
    func timeoutMicroseconds() -> UInt64? {
        var timeout: UInt64 = .max
        guard uplink_sd_journal_get_timeout(handle, &timeout) >= 0, timeout != .max else { return nil }
        return timeout
    }
}
