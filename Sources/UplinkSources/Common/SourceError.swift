/// A problem of a source, as a message that names what went wrong: the source cannot start (its journal or its
/// checkpoint directory cannot be opened, a pattern is invalid), or a value it was given is invalid.
public struct SourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, naming the source and the path, pattern or value involved where there is one.
    public var message: String

    /// An error with this message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
