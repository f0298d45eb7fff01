import UplinkFiles

/// A failure of the collector itself (not of a line it received): set-up, storage, or serving.
public struct CollectorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable machine-readable reason, e.g. `"io_error"`, `"not_listening"`.
    public var code: String
    /// Human-readable explanation, naming the file or setting involved.
    public var message: String

    /// Creates an error with a stable `code` and a human `message`.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }

    /// A file operation failed: `io_error`, with the file layer's message (the operation, the path and the system's
    /// reason) and the `errno`.
    static func io(_ error: FileError) -> CollectorError {
        CollectorError(code: "io_error", message: "\(error) (errno \(error.errno))")
    }
}
