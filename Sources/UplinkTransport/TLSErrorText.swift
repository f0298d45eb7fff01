import NIOSSL

/// Short, readable text for TLS errors, so a log line says what failed (the collector's certificate is not trusted,
/// the collector refused ours, …) instead of an error stack with source paths.
enum TLSErrorText {
    /// The BoringSSL reason codes in `error` (e.g. `CERTIFICATE_VERIFY_FAILED`), comma-separated; the error's own
    /// description when it carries none.
    static func reasons(of error: any Error) -> String {
        let text = String(describing: error)
        let reasons = reasonCodes(in: text)
        return reasons.isEmpty ? text : reasons.joined(separator: ", ")
    }

    /// `text` with BoringSSL's `error:XXXXXXXX:lib:func:REASON at file:line` entries reduced to their REASONs.
    static func reasonCodes(in text: String) -> [String] {
        var reasons: [String] = []
        var rest = Substring(text)
        while let range = rest.firstRange(of: "OPENSSL_internal:") {
            let after = rest[range.upperBound...]
            let reason = after.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !reason.isEmpty, !reasons.contains(String(reason)) { reasons.append(String(reason)) }
            rest = after
        }
        return reasons
    }

    /// A description of a failed connection when TLS was the cause, or nil.
    static func describe(_ error: any Error) -> String? {
        let text = String(describing: error)
        if let error = error as? NIOSSLExtraError {
            if error == .failedToValidateHostname {
                return "TLS failed: the collector's certificate does not name the host in uplink.url "
                    + "(set uplink.tls.server_name to a name it carries; \(error))"
            }
            return "TLS failed: \(error)"
        }
        if error is NIOSSLError || text.contains("OPENSSL_internal") {
            let reasons = reasonCodes(in: text)
            guard !reasons.isEmpty else { return "TLS failed: \(text)" }
            return "TLS failed: " + reasons.map(explain).joined(separator: "; ")
        }
        return nil
    }

    private static func explain(_ reason: String) -> String {
        switch reason {
        case "CERTIFICATE_VERIFY_FAILED":
            "the collector's certificate is not trusted or does not match its name "
                + "(CERTIFICATE_VERIFY_FAILED; check uplink.tls.ca_file and server_name)"
        case "TLSV1_ALERT_UNKNOWN_CA":
            "the collector does not trust our client certificate (TLSV1_ALERT_UNKNOWN_CA; check uplink.tls.cert_file)"
        case "SSLV3_ALERT_CERTIFICATE_EXPIRED":
            "the collector refused our client certificate as expired (SSLV3_ALERT_CERTIFICATE_EXPIRED)"
        case "TLSV13_ALERT_CERTIFICATE_REQUIRED":
            "the collector requires a client certificate (\(reason); set uplink.tls.cert_file and key_file)"
        case "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE":
            "the collector refused our client certificate (\(reason))"
        case "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL":
            "no TLS version in common with the collector (\(reason); check uplink.tls.min_version)"
        case "WRONG_VERSION_NUMBER":
            "the collector did not answer with TLS (\(reason); is it plain http?)"
        default:
            reason
        }
    }
}
