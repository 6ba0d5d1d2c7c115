using HybridKV.Checkpoints;
using HybridKV.Extensions.Hosting;
using Orleans.Storage;

namespace HybridKV.Orleans;

/// <summary>
/// How a HybridKV grain storage provider stores a silo's grain state: where its store lives, how it is sized and
/// committed, and how state is serialized.
/// </summary>
/// <remarks>
/// A class with settable properties, as Orleans' provider options are: the options pattern creates it empty and
/// <c>AddHybridKVGrainStorage</c>'s callback (or configuration) sets it.
/// </remarks>
public sealed class HybridKVGrainStorageOptions : IStorageProviderSerializerOptions
{
    /// <summary>What <see cref="Directory"/> may contain to name the silo: replaced by its <c>SiloName</c>.</summary>
    public const string SiloNamePlaceholder = "{SiloName}";

    /// <summary>
    /// The directory of this silo's store; required. Each silo needs its own: a second silo (or process) on the same
    /// directory is refused at start with <see cref="Devices.DirectoryInUseException"/>. May contain
    /// <see cref="SiloNamePlaceholder"/>, so that one setting serves every silo: <c>data/{SiloName}</c>. Only with a
    /// silo name that stays the same across restarts (<c>SiloOptions.SiloName</c>, which Orleans otherwise generates
    /// anew for every run): a new name is a new, empty directory.
    /// </summary>
    public string? Directory { get; set; }

    /// <summary>The hash index's initial number of buckets, a power of two. Default 2^16.</summary>
    public long IndexBuckets { get; set; } = 1L << 16;

    /// <summary>log2 of the log's page size; a grain's serialized state must fit in a page. Default 22 (4 MiB).</summary>
    public int PageSizeBits { get; set; } = 22;

    /// <summary>The memory of the log's page frames, a power of two of at least two pages. Default 64 MiB.</summary>
    public long MemorySizeBytes { get; set; } = 1L << 26;

    /// <summary>The number of sessions grain calls share, from 1 to 128. Default 32.</summary>
    public int SessionPoolSize { get; set; } = 32;

    /// <summary>How often a checkpoint is taken when no write asked for one sooner. Default 10 s.</summary>
    public TimeSpan CheckpointInterval { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>How long a write waits for others to share its checkpoint, from zero (the default) to 1 s.</summary>
    public TimeSpan CommitDelay { get; set; } = TimeSpan.Zero;

    /// <summary>How checkpoints capture the log. Default <see cref="CheckpointMode.Auto"/> (a fold-over while the store
    /// fits in memory, a snapshot while operations read the device).</summary>
    public CheckpointMode CheckpointMode { get; set; } = CheckpointMode.Auto;

    /// <summary>Every other store setting: receives the settings these options make and returns the ones to use.</summary>
    public Func<StoreSettings, StoreSettings>? ConfigureStore { get; set; }

    /// <summary>
    /// How grain state is turned into bytes. Defaults to the silo's grain storage serializer (Orleans' default, or the
    /// one <c>UseSystemTextJsonGrainStorageSerializer</c> and the like choose).
    /// </summary>
    public IGrainStorageSerializer GrainStorageSerializer { get; set; } = null!;

    /// <summary>The hosting options of the provider's store, for the silo named <paramref name="siloName"/>.</summary>
    internal HybridKVOptions ToHostingOptions(string siloName) => new()
    {
        Directory = Directory?.Replace(SiloNamePlaceholder, siloName, StringComparison.Ordinal),
        IndexBuckets = IndexBuckets,
        PageSizeBits = PageSizeBits,
        MemorySizeBytes = MemorySizeBytes,
        SessionPoolSize = SessionPoolSize,
        CheckpointInterval = CheckpointInterval,
        IndexCheckpointInterval = CheckpointInterval > TimeSpan.FromMinutes(5) ? CheckpointInterval : TimeSpan.FromMinutes(5),
        CommitDelay = CommitDelay,
        CheckpointMode = CheckpointMode,
        ConfigureStore = ConfigureStore,
    };
}
