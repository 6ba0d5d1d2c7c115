namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// A store under test. Each thread gets its own worker, which runs a batch of the stream in a loop written for its
/// store, so that the only indirect call is one per batch.
/// </summary>
public interface IYcsbStore : IDisposable
{
    /// <summary>The name RESULT lines and tables use.</summary>
    string Name { get; }

    /// <summary>Inserts keys 0 to <paramref name="keys"/> - 1, split over <paramref name="threads"/> threads.</summary>
    void Load(long keys, int threads, Action<long> progress);

    /// <summary>A worker for one thread (a session, for stores that have them).</summary>
    IYcsbWorker CreateWorker();

    /// <summary>
    /// Reads <paramref name="key"/>'s counter (the value's first 8 bytes) after a run, waiting for the device if it
    /// must; false if the key is not found. Called on the runner's thread when no worker runs.
    /// </summary>
    bool TryReadCounter(long key, out long counter);

    /// <summary>Checkpoints committed since the store was created (0 for stores without checkpoints).</summary>
    long CheckpointsCommitted => 0;

    /// <summary>A short description of the store's state for progress lines (its log's size, say), or null.</summary>
    string? Progress => null;

    /// <summary>The most bytes the store's files on disk held at any sample since it was created (0 if none).</summary>
    long PeakDiskBytes => 0;

    /// <summary>
    /// Samples the store's files for <see cref="PeakDiskBytes"/> now, then every 100 ms while <paramref name="running"/>
    /// (they are, from creation). The soak turns a store's samples off while the other store is measured: a sample lists
    /// the log's files, and the store without compaction has hundreds of them after a few seconds (thousands in a
    /// long run), whose listing every 100 ms took a share of the processors from the store being measured.
    /// </summary>
    void SampleDisk(bool running)
    {
    }

    /// <summary>Bytes the log has appended since the store was created (0 for stores without a log).</summary>
    long LogWrittenBytes => 0;

    /// <summary>
    /// Waits for the background work its last iteration left running (a compaction in progress), so that the store
    /// measured next does not share the processors with it. Called on the runner's thread when no worker runs.
    /// </summary>
    void Settle()
    {
    }
}

/// <summary>One thread's view of a store.</summary>
public interface IYcsbWorker : IDisposable
{
    /// <summary>Runs operations <paramref name="start"/> to <paramref name="start"/> + <paramref name="count"/> - 1
    /// of the stream; returns a checksum of what reads saw, so that no read can be optimised away.</summary>
    long Run(YcsbStreams streams, int start, int count);

    /// <summary>Finishes what the batch left pending (a no-op for stores without pending operations).</summary>
    void Complete(bool wait);
}

/// <summary>What a YCSB store is built from: the workload's shape and, for HybridKV, memory and checkpoints.</summary>
public sealed record YcsbStoreOptions(
    long Keys,
    int ValueBytes,
    long IndexBuckets,
    long? MemoryMb,
    string Directory,
    TimeSpan? CheckpointEvery,
    HybridKV.Checkpoints.CheckpointMode? CheckpointMode)
{
    /// <summary>Log compaction: null for the library's default, 0 for none (<see cref="StoreSettings.LogCompactionRatio"/>).</summary>
    public double? LogCompactionRatio { get; init; }

    /// <summary>Writers wait for compaction above this multiple of the live data: null for the library's default
    /// (<see cref="StoreSettings.LogSizeLimitRatio"/>).</summary>
    public double? LogSizeLimitRatio { get; init; }

    /// <summary>The device's segment size (default 1 GiB): whole segments are what compaction frees.</summary>
    public long SegmentBytes { get; init; } = 1L << 30;

    /// <summary>Whether the store needs a file device even with all its data in memory.</summary>
    public bool OnDevice { get; init; }

    /// <summary>HybridKV reads up to this many consecutive reads as one batch (1: one at a time).</summary>
    public int ReadBatch { get; init; } = 1;

    /// <summary>HybridKV prefetches the keys of each group of this many operations before running them (1: none).</summary>
    public int Prefetch { get; init; } = 1;

    /// <summary>The read cache of HybridKV and FASTER, in MiB (a power of two), or null for none.</summary>
    public long? ReadCacheMb { get; init; }

    /// <summary>HybridKV's <see cref="StoreSettings.CopyHotReadsToTail"/>.</summary>
    public bool CopyHotReads { get; init; } = true;

    /// <summary>FASTER copies every record its reads fetch from the device to the tail.</summary>
    public bool PeerCopyReads { get; init; }

    /// <summary>HybridKV's log lines at or above this level go to the console; null for none.</summary>
    public Microsoft.Extensions.Logging.LogLevel? StoreLog { get; init; }

    /// <summary>Where HybridKV's log device is: "file" (a direct-I/O file device under <see cref="Directory"/>) or
    /// "azure" (page blobs in the container named by <see cref="AzureContainer"/>, reached through the connection
    /// string in the environment variable HYBRIDKV_AZURE_CONNECTION).</summary>
    public string Device { get; init; } = "file";

    /// <summary>The blob container of the "azure" device (a new one per store: the runner names it).</summary>
    public string AzureContainer { get; init; } = "hybridkv-ycsb";

    /// <summary>
    /// The memory budget the peers get: <see cref="MemoryMb"/>, else the runner's in-memory sizing of HybridKV's log
    /// (twice its fixed-size records, at least 64 MiB, rounded up to a power of two).
    /// </summary>
    public long MemoryBytes => MemoryMb is { } budget
        ? budget << 20
        : (long)System.Numerics.BitOperations.RoundUpToPowerOf2(
            (ulong)Math.Max(1L << 26, Keys * HybridKvYcsbStore.RecordBytes(ValueBytes) * 2));
}
