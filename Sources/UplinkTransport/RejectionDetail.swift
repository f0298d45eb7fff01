/// The readable text of a non-200 answer's body: what a proxy or TLS terminator says about why it refused the
/// stream (nginx answers 400 "No required SSL certificate was sent" when mTLS fails at the proxy).
enum RejectionDetail {
    /// Bytes of the body looked at.
    static let maximumBytes = 2048
    /// Characters of text kept.
    static let maximumCharacters = 200

    /// `bytes` as one line of text: HTML tags removed (an nginx error page's `<title>` and `<h1>` repeat each other,
    /// so the title is dropped), control characters and runs of whitespace turned into single spaces.
    static func text(of bytes: [UInt8]) -> String? {
        var html = String(decoding: bytes, as: UTF8.self)
        if let start = html.firstRange(of: "<title>"), let end = html.firstRange(of: "</title>"), start.upperBound <= end.lowerBound {
            html.removeSubrange(start.lowerBound..<end.upperBound)
        }
        var result = ""
        var inTag = false
        var pendingSpace = false
        for character in html {
            if character == "<" { inTag = true; pendingSpace = true; continue }
            if character == ">" { inTag = false; continue }
            if inTag { continue }
            if character.isWhitespace || character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                pendingSpace = true
                continue
            }
            if pendingSpace, !result.isEmpty { result.append(" ") }
            pendingSpace = false
            result.append(character)
            if result.count >= maximumCharacters { break }
        }
        // nginx's pages end with a "nginx" or "nginx/1.22.1" footer: noise in a log line.
        for footer in [" nginx", "nginx"] where result.hasSuffix(footer) { result.removeLast(footer.count) }
        if let version = result.ranges(of: " nginx/").last { result.removeSubrange(version.lowerBound...) }
        return result.isEmpty ? nil : result
    }
}
