import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// How a failed connection reads, for the uplink's log and `uplink status`: NIO words a refused connect as
/// "connection reset (error set): Connection refused (errno: 111)"; this says only what happened.
public enum ConnectFailureText {
    /// "connection refused" for a refused connect, NIO's own description for other socket errors, else the error.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? IOError else { return String(describing: error) }
        return isRefused(error) ? "connection refused" : error.description
    }

    /// Whether `error` is a connect that the peer refused (nothing listens at the address and port).
    public static func isRefused(_ error: any Error) -> Bool {
        (error as? IOError)?.errnoCode == ECONNREFUSED
    }
}
