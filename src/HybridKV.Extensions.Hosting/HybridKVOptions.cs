using HybridKV.Checkpoints;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// How a hosted store is placed, sized, checkpointed and shared. Bound from configuration (by default the section
/// <c>HybridKV</c>) and validated when the host starts, so that a wrong value stops the application before it serves.
/// </summary>
/// <remarks>
/// A class with settable properties rather than a record: the options pattern creates it empty and the configuration
/// binder and <c>Configure</c> callbacks set its properties one by one. The store's own settings record
/// (<see cref="StoreSettings"/>) is built from it when the host starts; <see cref="ConfigureStore"/> reaches every
/// setting this class does not name.
/// </remarks>
public sealed class HybridKVOptions
{
    /// <summary>The configuration section bound by default.</summary>
    public const string DefaultSectionName = "HybridKV";

    /// <summary>The largest allowed <see cref="CommitDelay"/>.</summary>
    public static readonly TimeSpan MaxCommitDelay = TimeSpan.FromSeconds(1);

    /// <summary>
    /// The directory of the store's files (log segments under <c>log</c>, checkpoints under <c>checkpoints</c>); created
    /// if missing. Required, unless <see cref="StorageProvider"/> places the log and checkpoints elsewhere (then it must
    /// not be set). One store at a time may use it: a second one is refused with
    /// <see cref="Devices.DirectoryInUseException"/>.
    /// </summary>
    public string? Directory { get; set; }

    /// <summary>
    /// Where the log and checkpoints go instead of <see cref="Directory"/> (for example Azure Storage, set by
    /// <c>UseAzureStorage()</c> when its configuration names a container), opened when the host starts and disposed
    /// when it stops; <see langword="null"/> (the default) for local files. Not bound from configuration.
    /// </summary>
    public IHybridKVStorageProvider? StorageProvider { get; set; }

    /// <summary>The hash index's initial number of buckets, a power of two. Default 2^16 (4 MiB).</summary>
    public long IndexBuckets { get; set; } = 1L << 16;

    /// <summary>log2 of the log's page size. Default 20 (1 MiB pages).</summary>
    public int PageSizeBits { get; set; } = 20;

    /// <summary>The memory of the log's page frames, a power of two of at least two pages. Default 64 MiB.</summary>
    public long MemorySizeBytes { get; set; } = 1L << 26;

    /// <summary>log2 of the log's segment file size. Default 30 (1 GiB files).</summary>
    public int LogSegmentSizeBits { get; set; } = 30;

    /// <summary>The most sessions open at once, the pool's included. Default 128.</summary>
    public int MaxSessions { get; set; } = 128;

    /// <summary>
    /// The number of sessions in the pool that request handlers rent, from 1 to <see cref="MaxSessions"/>. Each has a
    /// stable identity (derived from the store type and its place in the pool), continued after a restart. A request
    /// that finds every session rented waits for one. Default 32.
    /// </summary>
    public int SessionPoolSize { get; set; } = 32;

    /// <summary>
    /// How often a checkpoint is taken when nothing asked for one sooner; skipped (and not logged) while no operation
    /// is waiting to become durable. At least 1 ms. Default 10 s.
    /// </summary>
    public TimeSpan CheckpointInterval { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// How old the last index checkpoint may get before the next checkpoint copies the index too (a full checkpoint);
    /// the others are log-only, and recovery replays the log since the last index checkpoint. The first checkpoint after
    /// start is always full. At least <see cref="CheckpointInterval"/>. Default 5 minutes.
    /// </summary>
    public TimeSpan IndexCheckpointInterval { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// How long a commit asked for (a durable write, <c>CommitAsync</c>) waits for others to join it before its
    /// checkpoint starts, from zero to <see cref="MaxCommitDelay"/>. Zero (the default) starts at once: requests that
    /// arrive while a checkpoint runs join the next one anyway, which is what groups them under load.
    /// </summary>
    public TimeSpan CommitDelay { get; set; } = TimeSpan.Zero;

    /// <summary>How checkpoints capture the log. Default <see cref="CheckpointMode.Auto"/> (a fold-over while the store
    /// fits in memory, a snapshot while operations read the device).</summary>
    public CheckpointMode CheckpointMode { get; set; } = CheckpointMode.Auto;

    /// <summary>How many of the newest checkpoints are kept, from 0 (all) to 1000. Default 3.</summary>
    public int CheckpointsToKeep { get; set; } = 3;

    /// <summary>
    /// The last word on the store's settings: receives those built from this class (directory, sizes, logging) and
    /// returns the ones to use, for what this class does not name (compaction, strict CPR, expiration clock). Not bound
    /// from configuration. With a <see cref="StorageProvider"/>, the validation at start calls it with a
    /// <see cref="Devices.NullDevice"/> standing in for the provider's device, which opens only afterwards.
    /// </summary>
    public Func<StoreSettings, StoreSettings>? ConfigureStore { get; set; }

    /// <summary>What log lines call the place of the store's log: the storage provider's description, or the directory.</summary>
    internal string Location => StorageProvider?.Description ?? Directory ?? "(no directory)";

    /// <summary>The store's settings as these options and <see cref="ConfigureStore"/> say.</summary>
    /// <param name="loggerFactory">Where the store logs.</param>
    /// <param name="storage">The opened storage of <see cref="StorageProvider"/>, or <see langword="null"/> for
    /// <see cref="Directory"/>.</param>
    /// <param name="meterFactory">Where the store's own meter is created (the host's).</param>
    internal StoreSettings ToStoreSettings(
        Microsoft.Extensions.Logging.ILoggerFactory? loggerFactory, HybridKVStorage? storage = null,
        System.Diagnostics.Metrics.IMeterFactory? meterFactory = null)
    {
        StoreSettings settings = ToStoreSettings(loggerFactory, storage?.LogDevice, storage?.CheckpointStore);
        // A factory ConfigureStore chose stays.
        return settings.MeterFactory is null ? settings with { MeterFactory = meterFactory } : settings;
    }

    /// <summary>The store's settings with an explicit device and checkpoint store (for validation, a stand-in).</summary>
    internal StoreSettings ToStoreSettings(
        Microsoft.Extensions.Logging.ILoggerFactory? loggerFactory, Devices.StorageDevice? logDevice,
        CheckpointStore? checkpointStore)
    {
        var settings = new StoreSettings
        {
            LogDirectory = logDevice is null ? Directory : null,
            LogDevice = logDevice,
            CheckpointStore = checkpointStore,
            IndexBuckets = IndexBuckets,
            PageSizeBits = PageSizeBits,
            MemorySizeBytes = MemorySizeBytes,
            LogSegmentSizeBits = LogSegmentSizeBits,
            MaxSessions = MaxSessions,
            CheckpointsToKeep = CheckpointsToKeep,
            LoggerFactory = loggerFactory,
        };
        return ConfigureStore is null ? settings : ConfigureStore(settings);
    }
}
