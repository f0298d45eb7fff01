import Logging
import UplinkCore

/// The `exec` source: runs `command` on every tick and reports what it prints (see `ExecConfig.Format`).
///
/// - The command runs without a shell, stdin and stderr on `/dev/null`, in its own process group. It is given
///   `timeout` (default 5 s, at most the interval); after that the whole group is killed with `SIGKILL`.
/// - Waiting never blocks a thread (the output pipe is polled from the source's own task), so a slow or hanging
///   command delays nothing but its own source; a run that overruns the interval makes the ticker skip ticks.
/// - A run that fails (cannot start, times out, exits non-zero or by a signal, prints nothing usable) logs a
///   warning when failures start (later ones in a row at debug level) and a notice when runs work again.
///   Output that exits 0 is parsed even when parts are malformed (logged like a failure).
/// - Records are timestamped when the output has been read.
public typealias ExecSource = ConfiguredSource<ExecConfig>

extension ExecSource {
    /// What went wrong with a run, for the log; `nil` when it worked.
    static func problem(_ outcome: Outcome, parsed: ParsedOutput?, timeout: Duration) -> String? {
        switch outcome {
        case .spawnFailed(let code): return "cannot start the command (errno \(code))"
        case .timedOut: return "the command did not finish within \(timeout) and was killed"
        case .signaled(let signal, _): return "the command was ended by signal \(signal)"
        case .exited(let status, _) where status != 0: return "the command exited with status \(status)"
        case .cancelled: return nil
        case .exited:
            guard let parsed else { return nil }
            if parsed.metrics.isEmpty { return "the command printed nothing usable as \(parsed.malformed > 0 ? "its format" : "a metric")" }
            if parsed.malformed > 0 { return "skipped \(parsed.malformed) malformed value(s) in the command's output" }
            return nil
        }
    }
}

extension ExecConfig {
    /// Runs `command` on every tick and emits what it printed.
    public func sample(with sensor: PeriodicSensorDriver) async {
        guard !command.isEmpty else { return sensor.disable("no command configured") }
        let (logger, emitter, clock) = (sensor.logger, sensor.emitter, sensor.clock)
        let timeout = effectiveTimeout
        var failing = false
        await sensor.run {
            let outcome = await ExecSource.runCommand(command, timeout: timeout)
            if outcome == .cancelled { return }
            let timestamp = clock.nowNanoseconds()
            var parsed: ExecSource.ParsedOutput?
            if case .exited(0, let output) = outcome {
                let result = ExecSource.parse(output, config: self)
                parsed = result
                for metric in result.metrics {
                    emitter.emit(metric.name, metric.value, unit: unit, tags: metric.tags, timestamp: timestamp)
                }
            }
            if let problem = ExecSource.problem(outcome, parsed: parsed, timeout: timeout) {
                sensor.health.failed(problem)
                let metadata: Logger.Metadata = ["command": "\(command.joined(separator: " "))"]
                if failing {
                    logger.debug("exec source: \(problem)", metadata: metadata)
                } else {
                    failing = true
                    logger.warning("exec source: \(problem); later failures in a row are logged at debug level", metadata: metadata)
                }
            } else if failing {
                failing = false
                logger.notice("exec source: the command works again")
            }
        }
    }
}
