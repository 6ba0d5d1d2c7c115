using System.Diagnostics.Metrics;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Diagnostics;

/// <summary>
/// Observable instruments under the meter <see cref="MeterName"/>. All are read when a listener collects, so they
/// cost nothing on the operation path.
/// </summary>
internal sealed class StoreMetrics : IDisposable
{
    /// <summary>The name of the meter every store publishes to.</summary>
    public const string MeterName = "HybridKV";

    private readonly Meter _meter;

    // Numbers the stores of the process: a factory hands out one meter per name and tags, and each store's instruments
    // must go with its own meter, disposed with the store.
    private static long s_instances;

    public StoreMetrics(HybridLog log, HashIndex index, Func<int> openSessions, Func<Compaction.MemoryCompactor?> compactor,
        Func<long> bytesReadByOperations, Func<long> hotReadsCopied, Checkpoints.CheckpointCounts? checkpoints,
        Caching.ReadCache? readCache = null, IMeterFactory? meterFactory = null)
    {
        _meter = meterFactory is null
            ? new Meter(MeterName)
            : meterFactory.Create(new MeterOptions(MeterName)
            {
                Tags = [new KeyValuePair<string, object?>("hybridkv.store.instance", Interlocked.Increment(ref s_instances))],
            });
        _meter.CreateObservableGauge("hybridkv.log.tail_address", () => log.TailAddress, "By",
            "The next logical address the log allocates.");
        _meter.CreateObservableGauge("hybridkv.log.read_only_address", () => log.ReadOnlyAddress, "By",
            "Records below this address are no longer updated in place.");
        _meter.CreateObservableGauge("hybridkv.log.memory_used", () => (long)log.AllocatedFrameCount * log.PageSize,
            "By", "Page frame memory allocated by the log.");
        _meter.CreateObservableGauge("hybridkv.index.overflow_buckets", () => index.OverflowBucketCount, "{bucket}",
            "Overflow buckets allocated by the hash index.");
        _meter.CreateObservableGauge("hybridkv.sessions.open", openSessions, "{session}", "Open sessions.");
        _meter.CreateObservableGauge("hybridkv.log.head_address", () => log.HeadAddress, "By",
            "Records below this address are on the device.");
        _meter.CreateObservableGauge("hybridkv.log.flushed_until_address", () => log.FlushedUntilAddress, "By",
            "Everything below this address is on the device.");
        if (readCache is not null)
        {
            _meter.CreateObservableCounter("hybridkv.read_cache.hits", () => readCache.Hits, "{record}",
                "Records reads found in the read cache instead of reading them from the device.");
            _meter.CreateObservableCounter("hybridkv.read_cache.misses", () => readCache.Misses, "{record}",
                "Records reads looked for in the read cache and read from the device.");
        }

        if (log.Device is { } device)
        {
            _meter.CreateObservableCounter("hybridkv.device.bytes_written", () => device.BytesWritten, "By",
                "Bytes the log device has written.");
            _meter.CreateObservableCounter("hybridkv.device.bytes_read", () => device.BytesRead, "By",
                "Bytes the log device has read.");
            _meter.CreateObservableCounter("hybridkv.device.bytes_read_by_operations", bytesReadByOperations, "By",
                "Bytes operations read from the log device because their records were not in memory.");
            _meter.CreateObservableCounter("hybridkv.reads.copied_to_tail", hotReadsCopied, "{record}",
                "Records reads fetched from the device and copied to the tail because their keys are read often " +
                "(StoreSettings.CopyHotReadsToTail).");
            _meter.CreateObservableCounter("hybridkv.compaction.memory.bytes_copied",
                () => compactor()?.BytesCopied ?? 0, "By",
                "Bytes of live records copied to the tail to keep them in memory.");
            _meter.CreateObservableCounter("hybridkv.compaction.memory.pages_left_live",
                () => (compactor()?.PagesMostlyLive ?? 0) + (compactor()?.PagesMissed ?? 0) + (compactor()?.PagesSkipped ?? 0),
                "{page}", "Pages that left memory with live records (mostly live, not examined in time, or skipped " +
                "while pages were mostly live).");
        }

        if (checkpoints is not null)
        {
            _meter.CreateObservableCounter("hybridkv.checkpoints.committed", () => new[]
                {
                    new Measurement<long>(checkpoints.FoldOvers, new KeyValuePair<string, object?>(ModeTag, "fold_over")),
                    new Measurement<long>(checkpoints.Snapshots, new KeyValuePair<string, object?>(ModeTag, "snapshot")),
                }, "{checkpoint}", "Checkpoints committed, by the mode that captured the log.");
        }
    }

    /// <summary>The tag of <c>hybridkv.checkpoints.committed</c> that names the mode.</summary>
    public const string ModeTag = "hybridkv.checkpoint.mode";

    public void Dispose() => _meter.Dispose();
}
