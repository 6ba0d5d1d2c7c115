using HybridKV.Checkpoints;
using Microsoft.Extensions.Logging;

namespace HybridKV.Diagnostics;

/// <summary>Log messages of checkpoints and recovery, with stable event ids (100–199).</summary>
internal static partial class CheckpointLog
{
    [LoggerMessage(EventId = 100, Level = LogLevel.Information,
        Message = "Checkpoint {Token} of version {Version} started ({Kind}, {Mode})")]
    public static partial void Started(ILogger logger, Guid token, long version, CheckpointKind kind, CheckpointMode mode);

    [LoggerMessage(EventId = 101, Level = LogLevel.Debug,
        Message = "Checkpoint {Token}: {Phase} took {Milliseconds:F1} ms")]
    public static partial void Phase(ILogger logger, Guid token, string phase, double milliseconds);

    [LoggerMessage(EventId = 105, Level = LogLevel.Debug,
        Message = "Checkpoint {Token}: phase {Phase} took {Milliseconds:F1} ms")]
    public static partial void PhaseOf(ILogger logger, Guid token, CprPhase phase, double milliseconds);

    [LoggerMessage(EventId = 106, Level = LogLevel.Debug,
        Message = "Checkpoint {Token}: automatic mode chose {Mode}: operations read {BytesRead} bytes from the device " +
                  "since the previous checkpoint, a snapshot would write {SnapshotBytes}")]
    public static partial void ModeChosen(ILogger logger, Guid token, CheckpointMode mode, long bytesRead,
        long snapshotBytes);

    [LoggerMessage(EventId = 102, Level = LogLevel.Information,
        Message = "Checkpoint {Token} of version {Version} is durable: log up to {FinalAddress}, {SessionCount} " +
                  "sessions, {Milliseconds:F1} ms")]
    public static partial void Completed(
        ILogger logger, Guid token, long version, long finalAddress, int sessionCount, double milliseconds);

    [LoggerMessage(EventId = 103, Level = LogLevel.Information, Message = "Checkpoint {Token} deleted by retention")]
    public static partial void Deleted(ILogger logger, Guid token);

    [LoggerMessage(EventId = 104, Level = LogLevel.Error, Message = "Periodic checkpoint failed")]
    public static partial void PeriodicFailed(ILogger logger, Exception error);

    [LoggerMessage(EventId = 110, Level = LogLevel.Warning,
        Message = "Recovery skipped a checkpoint: {Problem}")]
    public static partial void Skipped(ILogger logger, string problem);

    [LoggerMessage(EventId = 113, Level = LogLevel.Warning,
        Message = "Recovery deleted checkpoint {Abandoned}: it is newer than (or not comparable with) the recovered " +
                  "checkpoint {Recovered}, whose log the store now continues")]
    public static partial void Abandoned(ILogger logger, Guid abandoned, Guid recovered);

    [LoggerMessage(EventId = 114, Level = LogLevel.Information,
        Message = "Recovery from checkpoint {Token}: {ReplayedBytes} of {TotalBytes} bytes of log replayed")]
    public static partial void ReplayProgress(ILogger logger, Guid token, long replayedBytes, long totalBytes);

    [LoggerMessage(EventId = 111, Level = LogLevel.Information,
        Message = "Recovery from checkpoint {Token} (version {Version}): {Step} took {Milliseconds:F1} ms")]
    public static partial void RecoveryStep(ILogger logger, Guid token, long version, string step, double milliseconds);

    [LoggerMessage(EventId = 112, Level = LogLevel.Information,
        Message = "Recovered checkpoint {Token} (version {Version}): log [{BeginAddress}, {TailAddress}), " +
                  "{RecordCount} records replayed, {SessionCount} sessions, {Milliseconds:F1} ms")]
    public static partial void Recovered(ILogger logger, Guid token, long version, long beginAddress, long tailAddress,
        long recordCount, int sessionCount, double milliseconds);
}
