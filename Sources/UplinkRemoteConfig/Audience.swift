#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which agents a signed document is for: a glob on the agent id and globs on labels, all of which must match.
/// The agent checks it against its *own* local id and labels, so a collector cannot hand one site's document to
/// another site even when both trust the same key.
public struct Audience: Sendable, Hashable, Codable {
    /// A glob (`*`, `?`, `[…]`, as in a shell) on the agent id; `*` = every agent.
    public var agent: String
    /// Label name → glob on its value; an agent without the label does not match.
    public var labels: [String: String]

    public init(agent: String = "*", labels: [String: String] = [:]) {
        self.agent = agent
        self.labels = labels
    }

    /// Every agent.
    public static let everyone = Audience()

    /// Whether an agent with this id and these labels is in the audience.
    public func includes(agentID: String, labels agentLabels: [String: String]) -> Bool {
        guard Self.glob(agent, matches: agentID) else { return false }
        for (name, pattern) in labels {
            guard let value = agentLabels[name], Self.glob(pattern, matches: value) else { return false }
        }
        return true
    }

    /// Parses the command line's selector: `*`, or comma-separated terms `agent=GLOB` and `labels.NAME=GLOB`, e.g.
    /// `agent=edge-*,labels.site=berlin-*`. Throws a sentence that names the bad term.
    public init(selector: String) throws(SelectorError) {
        self.init()
        let terms = selector.split(separator: ",", omittingEmptySubsequences: false)
        if selector == "*" { return }
        var sawAgent = false
        for term in terms {
            guard let equals = term.firstIndex(of: "=") else {
                throw SelectorError(term: String(term), reason: "expected agent=GLOB or labels.NAME=GLOB")
            }
            let key = term[..<equals]
            let value = String(term[term.index(after: equals)...])
            guard !value.isEmpty else { throw SelectorError(term: String(term), reason: "the glob is empty") }
            if key == "agent" {
                guard !sawAgent else { throw SelectorError(term: String(term), reason: "agent is given twice") }
                sawAgent = true
                agent = value
            } else if key.hasPrefix("labels."), key.count > "labels.".count {
                let name = String(key.dropFirst("labels.".count))
                guard labels[name] == nil else { throw SelectorError(term: String(term), reason: "label \(name) is given twice") }
                labels[name] = value
            } else {
                throw SelectorError(term: String(term), reason: "expected agent=GLOB or labels.NAME=GLOB")
            }
        }
    }

    /// The selector form of this audience (`*` for everyone).
    public var selector: String {
        var terms: [String] = []
        if agent != "*" || labels.isEmpty { terms.append(agent == "*" && labels.isEmpty ? "*" : "agent=\(agent)") }
        for name in labels.keys.sorted() { terms.append("labels.\(name)=\(labels[name]!)") }
        return terms.joined(separator: ",")
    }

    /// A selector the command line could not read.
    public struct SelectorError: Error, Sendable, CustomStringConvertible {
        public let term: String
        public let reason: String
        public var description: String { "audience term '\(term)': \(reason)" }
    }

    static func glob(_ pattern: String, matches value: String) -> Bool {
        fnmatch(pattern, value, 0) == 0
    }
}
