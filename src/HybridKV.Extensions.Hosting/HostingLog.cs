using HybridKV.Checkpoints;
using Microsoft.Extensions.Logging;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// The hosting package's log messages, with stable event ids (1000–1099; the store's own are below 1000). Nothing is
/// logged per periodic tick of an idle store, and a checkpoint that succeeds is logged at Debug (the store logs its
/// own at Information under the category <c>HybridKV.Checkpoints</c>).
/// </summary>
internal static partial class HostingLog
{
    [LoggerMessage(EventId = 1000, Level = LogLevel.Information,
        Message = "Opening HybridKV store {StoreType} in {Location}")]
    public static partial void Opening(ILogger logger, string storeType, string location);

    [LoggerMessage(EventId = 1001, Level = LogLevel.Information,
        Message = "Recovered HybridKV store {StoreType} from checkpoint {Token} (version {Version}) in " +
                  "{Milliseconds:F0} ms; {PoolSize} pooled sessions continued")]
    public static partial void Recovered(
        ILogger logger, string storeType, Guid token, long version, double milliseconds, int poolSize);

    [LoggerMessage(EventId = 1002, Level = LogLevel.Information,
        Message = "HybridKV store {StoreType} found no checkpoint and starts empty; {PoolSize} pooled sessions opened")]
    public static partial void StartedEmpty(ILogger logger, string storeType, int poolSize);

    [LoggerMessage(EventId = 1003, Level = LogLevel.Error,
        Message = "A {Reason} checkpoint failed; writes waiting for it were told so, and nothing acknowledged as " +
                  "durable is lost")]
    public static partial void CheckpointFailed(ILogger logger, CheckpointReason reason, Exception error);

    [LoggerMessage(EventId = 1004, Level = LogLevel.Debug,
        Message = "A {Reason} checkpoint ({Kind}) is durable after {Milliseconds:F1} ms")]
    public static partial void CheckpointTaken(ILogger logger, CheckpointReason reason, CheckpointKind kind, double milliseconds);

    [LoggerMessage(EventId = 1005, Level = LogLevel.Warning,
        Message = "HybridKV store {StoreType}: {Rented} pooled sessions were still rented when the shutdown timeout " +
                  "ended; the store is closed without waiting for them")]
    public static partial void DrainTimedOut(ILogger logger, string storeType, int rented);

    [LoggerMessage(EventId = 1006, Level = LogLevel.Information,
        Message = "HybridKV store {StoreType} stopped: every operation is durable ({Milliseconds:F0} ms to stop)")]
    public static partial void Stopped(ILogger logger, string storeType, double milliseconds);

    [LoggerMessage(EventId = 1007, Level = LogLevel.Error,
        Message = "HybridKV store {StoreType} stopped without its final checkpoint (shutdown timeout or a failed " +
                  "checkpoint): operations since the last checkpoint that were not acknowledged as durable are lost")]
    public static partial void StoppedUncommitted(ILogger logger, string storeType, Exception? error);

    [LoggerMessage(EventId = 1008, Level = LogLevel.Critical,
        Message = "HybridKV store {StoreType} could not be opened or recovered from {Location}")]
    public static partial void OpenFailed(ILogger logger, string storeType, string location, Exception error);
}
