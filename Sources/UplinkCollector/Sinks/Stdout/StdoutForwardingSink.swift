import NIOPosix

/// `type: stdout`: one readable line per record on standard output, in `StdoutSink`'s format.
struct StdoutForwardingSink: ForwardingSink {
    let output: any CollectorOutput

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        var text: [UInt8] = []
        for entry in batch.entries { StdoutSink.format(entry.record, agent: entry.agent, to: &text) }
        guard !text.isEmpty else { return }
        let output = self.output
        let bytes = text
        do {
            try await NIOThreadPool.singleton.runIfActive { try bytes.withUnsafeBytes { try output.write($0) } }
        } catch {
            throw SinkFailure(.retry, "\(error)")
        }
    }
}
