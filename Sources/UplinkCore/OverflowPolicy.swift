/// What the circular buffer does with a new frame when it is full.
public enum OverflowPolicy: String, Sendable, CaseIterable {
    /// Drop the oldest frames, sent or not, to make room (the default): recent data is worth more, and the gap in
    /// sequence numbers shows the loss at the collector.
    case dropOldest = "drop_oldest"
    /// Refuse the new frame and keep what is buffered.
    case dropNewest = "drop_newest"
}
