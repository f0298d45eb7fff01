import UplinkCore

extension ConfigMapping {
    /// The keys of a backoff mapping (`uplink.backoff`, `collector.sinks[].backoff`).
    public static let backoffKeys = ["initial", "multiplier", "max", "reset_after"]

    /// Reads `key` as a backoff mapping (`initial` > 0, `multiplier` ≥ 1, `max` ≥ `initial` with defaults
    /// included, `reset_after` > 0; each absent key keeps `Backoff()`'s value). Nil when the key is absent or not a
    /// mapping; the defaults when a value is unusable (reported).
    public func backoff(_ key: String) -> Backoff? {
        guard let section = mapping(key, allowedKeys: Self.backoffKeys) else { return nil }
        let defaults = Backoff()
        let initial = section.duration("initial", .greaterThan(.zero))
        let multiplier = section.double("multiplier", .atLeast(1))
        let maximum = section.duration("max", .greaterThan(.zero))
        let resetAfter = section.duration("reset_after", .greaterThan(.zero))
        let effectiveInitial = initial ?? defaults.initial
        let effectiveMaximum = maximum ?? defaults.maximum
        if effectiveMaximum < effectiveInitial, initial != nil || maximum != nil {
            let format = ConfigValueParsing.format(duration:)
            let initialText = format(effectiveInitial) + (initial == nil ? ", the default" : "")
            let maximumText = format(effectiveMaximum) + (maximum == nil ? ", the default" : "")
            // Reported at whichever of the two the file sets last (or the one it sets).
            let key = maximum != nil && (initial == nil || Self.isAfter(section.value("max"), section.value("initial")))
                ? "max" : "initial"
            let mark = section.value(key)?.mark ?? section.node.mark
            section.decoder.report(
                .outOfRange, at: mark, path: section.path(key),
                "'max' (\(maximumText)) must not be smaller than 'initial' (\(initialText))")
            return defaults
        }
        guard initial != nil || multiplier != nil || maximum != nil || resetAfter != nil else { return defaults }
        return Backoff(
            initial: effectiveInitial, multiplier: multiplier ?? defaults.multiplier, maximum: effectiveMaximum,
            resetAfter: resetAfter ?? defaults.resetAfter)
    }

    private static func isAfter(_ lhs: ConfigNode?, _ rhs: ConfigNode?) -> Bool {
        guard let lhs, let rhs else { return lhs != nil }
        return (lhs.mark.line, lhs.mark.column) > (rhs.mark.line, rhs.mark.column)
    }
}
