extension StringProtocol {
    /// The text without its leading and trailing characters that `isTrimmed` accepts (empty when it accepts them all).
    public func trimming(while isTrimmed: (Character) -> Bool) -> SubSequence {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }

    /// The text without leading and trailing spaces and tabs, as header values and key file lines are read.
    public var trimmingSpacesAndTabs: SubSequence {
        trimming { $0 == " " || $0 == "\t" }
    }
}
