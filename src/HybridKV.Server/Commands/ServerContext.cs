using HybridKV.Checkpoints;
using HybridKV.Extensions.Hosting;
using HybridKV.Server.Hosting;
using Microsoft.Extensions.Logging;

namespace HybridKV.Server.Commands;

/// <summary>What every connection's commands share: the store, its commit scheduler, the options and the counters.</summary>
internal sealed class ServerContext
{
    private long _nextClientId;

    public ServerContext(RespStore store, CommitScheduler commits, RespServerOptions options, ServerStatistics statistics,
        ILogger logger, RecoveryResult? recovery)
    {
        Store = store;
        Commits = commits;
        Options = options;
        Statistics = statistics;
        Logger = logger;
        Recovery = recovery;
        StartedAt = DateTimeOffset.UtcNow;
    }

    /// <summary>The store.</summary>
    public RespStore Store { get; }

    /// <summary>The hosting package's group commit: every commit the server waits for goes through it.</summary>
    public CommitScheduler Commits { get; }

    /// <summary>The server's options.</summary>
    public RespServerOptions Options { get; }

    /// <summary>Totals for INFO and the meters.</summary>
    public ServerStatistics Statistics { get; }

    /// <summary>The server's logger.</summary>
    public ILogger Logger { get; }

    /// <summary>What recovery found when the server started; null for a new store.</summary>
    public RecoveryResult? Recovery { get; }

    /// <summary>When the server started.</summary>
    public DateTimeOffset StartedAt { get; }

    /// <summary>The port the server listens on (the one bound, when configured as 0).</summary>
    public int Port { get; set; }

    /// <summary>
    /// Whether some of the log has left memory, so that an operation may go pending on a read from the device (an
    /// estimate from the log's size; a compaction that shrinks the log makes it false again).
    /// </summary>
    public bool MayReadFromDevice => Store.TailAddress - Store.BeginAddress > Store.Settings.MemorySizeBytes;

    /// <summary>A new connection's id (CLIENT ID), increasing from 1.</summary>
    public long NextClientId() => Interlocked.Increment(ref _nextClientId);
}
