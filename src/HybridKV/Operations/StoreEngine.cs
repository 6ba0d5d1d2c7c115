using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Epochs;
using HybridKV.Index;
using HybridKV.Log;
using Microsoft.Extensions.Logging;

namespace HybridKV.Operations;

/// <summary>
/// The operations of FASTER appendix G over one index and one HybridLog, generic over the user's functions struct so
/// that every callback is bound statically. One file per operation; the steps they share (trace back, append a record,
/// link it) are in <c>StoreEngine.Records.cs</c>.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
    : IDisposable, Compaction.IPageCompactor
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreSettings _settings;

    // Not readonly: a readonly struct field would be copied before every callback call.
    private TFunctions _functions;

    // The global CPR state (CPR §6.2): phase and version in one word, read by every session as it enters an operation.
    private long _systemState = new SystemState(CprPhase.Rest, 1).Word;

    // The tail when the running (or last) commit began: every record of the next version lies at or above it.
    private long _commitStartAddress;

    // Where damaged records found by device reads are reported.
    private readonly ILogger _logger;

    // Bytes that operations (not compaction, scans or checkpoints) read from the device: whether the store misses its
    // memory, for CheckpointMode.Auto.
    private long _bytesReadByOperations;

    // Which reads from the device copy their record to the tail (StoreSettings.CopyHotReadsToTail); null when off or
    // when a read cache keeps those records instead.
    private readonly Caching.HotReadFilter? _hotReads;

    public StoreEngine(StoreSettings settings, TFunctions functions, StorageDevice? device, ILogger logger)
    {
        if (settings.ReadCacheBytes > 0 && LogRecord<TKey, TValue>.IsVariable)
        {
            throw new ArgumentException(
                $"{nameof(StoreSettings.ReadCacheBytes)} is {settings.ReadCacheBytes}, but the read cache holds records " +
                $"of fixed-size keys and values only, and this store's key ({typeof(TKey).Name}) or value " +
                $"({typeof(TValue).Name}) has variable length; set it to 0.", nameof(settings));
        }

        _settings = settings;
        _logger = logger;
        _functions = functions;
        // Four rows more than sessions: the checkpoint state machine protects itself while it copies frames, the
        // memory compactor while it copies records, log compaction while it traces and copies records, and index
        // growth while it splits buckets.
        Epoch = new LightEpoch(settings.MaxSessions + 4);
        Epoch.TryAcquireEntry(out int maintenanceEntry);
        MaintenanceEntry = maintenanceEntry;
        Epoch.TryAcquireEntry(out int compactionEntry);
        CompactionEntry = compactionEntry;
        Epoch.TryAcquireEntry(out int logCompactionEntry);
        LogCompactionEntry = logCompactionEntry;
        Epoch.TryAcquireEntry(out int growthEntry);
        Growth = new IndexGrowth(Epoch, growthEntry, this, settings.IndexMaxBucketsOrDefault,
            settings.IndexGrowthOverflowPercent, logger);
        Index = new HashIndex(settings.IndexBuckets);
        Index.EnableGrowth(Growth);
        Snapshot = new SnapshotProgress(Epoch);
        Log = new HybridLog(Epoch, settings.PageSizeBits, settings.BufferPages, settings.MutablePages, device, logger,
            RecordFormat<TKey, TValue>.Instance);
        ReadCache = settings.ReadCacheBytes > 0
            ? new Caching.ReadCache(settings.ReadCacheBytes, LogRecord<TKey, TValue>.MaxFixedSize)
            : null;
        _hotReads = settings.CopyHotReadsToTail && ReadCache is null ? new Caching.HotReadFilter(settings.MemorySizeBytes) : null;
        if (Log.HasDevice && Compaction.SupersededKeys<TKey, TValue>.IsSupported(Log.PageSize))
        {
            Superseded = new Compaction.SupersededKeys<TKey, TValue>(Log.PageSize);
            Log.Links = Superseded.Links;
        }
    }

    /// <summary>The keys of the records linked in front of others, which log compaction drops those by (its thread's
    /// alone); null where the log has no device or its records are of the variable layout.</summary>
    public Compaction.SupersededKeys<TKey, TValue>? Superseded { get; }

    /// <summary>The read cache, if <see cref="StoreSettings.ReadCacheBytes"/> asked for one.</summary>
    public Caching.ReadCache? ReadCache { get; }

    public LightEpoch Epoch { get; }

    /// <summary>How far the running snapshot has copied the log; updates of records it copied go back in place.</summary>
    public SnapshotProgress Snapshot { get; }

    /// <summary>The clock expiry is decided by.</summary>
    public TimeProvider Clock => _settings.TimeProvider;

    /// <summary>Whether commits use strict CPR (no excluded operations; CPR §6.2.3).</summary>
    public bool StrictCpr => _settings.StrictCpr;

    /// <summary>The epoch row of the store's own background work (copying frames into a snapshot).</summary>
    public int MaintenanceEntry { get; }

    /// <summary>The epoch row of the memory compactor (<see cref="Compaction.MemoryCompactor"/>).</summary>
    public int CompactionEntry { get; }

    /// <summary>The epoch row of log compaction (<see cref="Compaction.LogCompaction{TKey, TValue, TInput, TOutput, TContext, TFunctions}"/>).</summary>
    public int LogCompactionEntry { get; }

    /// <summary>The global CPR state; only the checkpoint state machine and recovery change it.</summary>
    public SystemState State
    {
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
        get => SystemState.FromWord(Volatile.Read(ref _systemState));
        set => Volatile.Write(ref _systemState, value.Word);
    }

    /// <summary>
    /// The tail when the running commit began (L_s^h), set by the state machine before it leaves REST: records below it
    /// are of the committing version or older, whatever their 13-bit stamp says.
    /// </summary>
    public long CommitStartAddress
    {
        get => Volatile.Read(ref _commitStartAddress);
        set => Volatile.Write(ref _commitStartAddress, value);
    }

    public HashIndex Index { get; private set; }

    /// <summary>Doubles the index when its chains grow long (FASTER appendix B).</summary>
    public IndexGrowth Growth { get; }

    /// <summary>Swaps in an index loaded by recovery, before any session exists (so no resize is running).</summary>
    public void ReplaceIndex(HashIndex index)
    {
        HashIndex old = Index;
        index.EnableGrowth(Growth);
        Index = index;
        old.Dispose();
    }

    public HybridLog Log { get; }

    /// <summary>Bytes that operations have read from the log device since the store opened.</summary>
    public long BytesReadByOperations => Volatile.Read(ref _bytesReadByOperations);

    /// <summary>The size of every record of this store in the log, in the fixed layout.</summary>
    public static int RecordSize => LogRecord<TKey, TValue>.FixedSize;

    public void Dispose()
    {
        // No session is protected any more, so every waiting trigger action can run now: those that start flushes must
        // run before the log waits for its flushes and frees the frames they write from.
        Epoch.TryDrain();
        Growth.Dispose();
        Log.Dispose();
        Index.Dispose();
        ReadCache?.Dispose();
        Epoch.Dispose();
    }
}
