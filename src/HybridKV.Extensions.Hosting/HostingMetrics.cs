using System.Diagnostics;
using System.Diagnostics.Metrics;
using HybridKV.Checkpoints;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// The hosted store's instruments, on a meter named <see cref="MeterName"/> created through the host's
/// <see cref="IMeterFactory"/> and tagged with the store type. Observable instruments read the store only while it is
/// open; the others are recorded by the scheduler and the pool, off the operations' path.
/// </summary>
internal sealed class HostingMetrics
{
    /// <summary>The meter's name.</summary>
    public const string MeterName = "HybridKV.Hosting";

    private readonly Histogram<double> _checkpointDuration;
    private readonly Histogram<long> _checkpointSize;
    private readonly Counter<long> _checkpointFailures;
    private readonly Histogram<double> _commitWait;

    public HostingMetrics(IMeterFactory meterFactory, string storeType, IHostedStoreState state)
    {
        Meter meter = meterFactory.Create(new MeterOptions(MeterName)
        {
            Tags = [new KeyValuePair<string, object?>("hybridkv.store", storeType)],
        });
        _checkpointDuration = meter.CreateHistogram<double>("hybridkv.checkpoint.duration", "s",
            "How long checkpoints took, from start to durable.");
        _checkpointSize = meter.CreateHistogram<long>("hybridkv.checkpoint.size", "By",
            "What a checkpoint wrote: the log written since the one before, and the index for a full checkpoint.");
        _checkpointFailures = meter.CreateCounter<long>("hybridkv.checkpoint.failures", "{checkpoint}",
            "Checkpoints that failed.");
        _commitWait = meter.CreateHistogram<double>("hybridkv.commit.wait", "s",
            "How long a durable write or commit request waited for its checkpoint.");
        meter.CreateObservableCounter("hybridkv.operations", () => Observe(state, s => s.OperationCount),
            "{operation}", "Operations issued through the session pool.");
        meter.CreateObservableUpDownCounter("hybridkv.operations.pending", () => Observe(state, s => (long)s.PendingCount),
            "{operation}", "Operations of pooled sessions waiting for the device or an earlier operation.");
        meter.CreateObservableUpDownCounter("hybridkv.sessions.rented", () => Observe(state, s => (long)s.RentedCount),
            "{session}", "Pooled sessions rented now.");
        meter.CreateObservableGauge("hybridkv.commit.lag", () => Observe(state, s => s.CommitLag.TotalSeconds), "s",
            "How long operations have been waiting to become durable: the age of the last commit while any waits, else 0.");
        meter.CreateObservableGauge("hybridkv.log.size", () => Observe(state, s => s.Store!.TailAddress - s.Store.BeginAddress),
            "By", "The log from its begin address to its tail, in memory and on the device.");
        meter.CreateObservableGauge("hybridkv.index.size", () => Observe(state, s => s.Store!.IndexBucketCount * 64),
            "By", "The hash index's buckets.");
    }

    private static IEnumerable<Measurement<T>> Observe<T>(IHostedStoreState state, Func<IHostedStoreState, T> read)
        where T : struct =>
        state.Store is null ? [] : [new Measurement<T>(read(state))];

    public void CheckpointTaken(CheckpointReason reason, CheckpointKind kind, TimeSpan took, long bytes)
    {
        var tags = new TagList { { "hybridkv.checkpoint.reason", ReasonTag(reason) }, { "hybridkv.checkpoint.kind", KindTag(kind) } };
        _checkpointDuration.Record(took.TotalSeconds, tags);
        _checkpointSize.Record(bytes, tags);
    }

    public void CheckpointFailed(CheckpointReason reason) =>
        _checkpointFailures.Add(1, new KeyValuePair<string, object?>("hybridkv.checkpoint.reason", ReasonTag(reason)));

    public void CommitWaited(TimeSpan waited) => _commitWait.Record(waited.TotalSeconds);

    private static string ReasonTag(CheckpointReason reason) => reason switch
    {
        CheckpointReason.Periodic => "periodic",
        CheckpointReason.Requested => "requested",
        _ => "shutdown",
    };

    private static string KindTag(CheckpointKind kind) => kind == CheckpointKind.Full ? "full" : "log_only";
}

/// <summary>What the meters and the health check read of a hosted store.</summary>
internal interface IHostedStoreState
{
    /// <summary>The store while it is open; null before start and after stop.</summary>
    IHybridKVStore? Store { get; }

    /// <summary>Operations issued through pooled sessions since start.</summary>
    long OperationCount { get; }

    /// <summary>Pending operations of pooled sessions.</summary>
    int PendingCount { get; }

    /// <summary>Pooled sessions rented now.</summary>
    int RentedCount { get; }

    /// <summary>The age of the last commit while operations wait to become durable; zero otherwise.</summary>
    TimeSpan CommitLag { get; }
}
