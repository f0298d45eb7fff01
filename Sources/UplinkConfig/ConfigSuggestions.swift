/// "Did you mean …?" for misspelled keys and values.
public enum ConfigSuggestions {
    /// The candidate closest to `word`, if it is close enough to be a plausible misspelling.
    ///
    /// Words are compared case-insensitively with `_` and `-` removed (so `perCore` and `per-core` match `per_core`
    /// exactly), by optimal-string-alignment distance (insertions, deletions, substitutions and transpositions of
    /// adjacent characters each cost 1). A candidate qualifies when its distance is at most a third of its length
    /// (at least 1, at most 3) and smaller than its length; ties go to the earlier candidate.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let normalizedWord = normalize(word)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let normalizedCandidate = normalize(candidate)
            let distance = editDistance(normalizedWord, normalizedCandidate)
            let allowed = min(3, max(1, normalizedCandidate.count / 3))
            guard distance <= allowed, distance < normalizedCandidate.count else { continue }
            if distance < best?.distance ?? Int.max { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// A hint listing the allowed words, led by a suggestion when one is close:
    /// `did you mean 'interval'? allowed keys: interval, per_core, proc_root`.
    public static func hint(for word: String, among candidates: [String], listing noun: String) -> String {
        let list = "\(noun): " + candidates.joined(separator: ", ")
        guard let suggestion = closest(to: word, among: candidates) else { return list }
        return "did you mean '\(suggestion)'? \(list)"
    }

    private static func normalize(_ word: String) -> [Unicode.Scalar] {
        word.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" }
    }

    /// Optimal string alignment distance (restricted Damerau–Levenshtein).
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previousPrevious[j - 2] + 1)
                }
                current[j] = value
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }
}
