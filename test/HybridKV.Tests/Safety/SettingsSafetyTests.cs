using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>Settings that cannot work, or would be ignored, are refused with the setting named (issue 17, item 5).</summary>
[Trait("Category", "Safety")]
public sealed class SettingsSafetyTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void Undefined_enum_values_are_refused_naming_the_setting_and_the_allowed_values()
    {
        var mode = Assert.Throws<ArgumentOutOfRangeException>(
            () => new StoreSettings { PeriodicCheckpointMode = (CheckpointMode)7 }.Validate());
        Assert.Equal(nameof(StoreSettings.PeriodicCheckpointMode), mode.ParamName);
        Assert.Contains("FoldOver, Snapshot or Auto", mode.Message, StringComparison.Ordinal);
        Assert.Equal((CheckpointMode)7, mode.ActualValue);

        var existing = Assert.Throws<ArgumentOutOfRangeException>(
            () => new StoreSettings { ExistingData = (ExistingDataPolicy)9 }.Validate());
        Assert.Equal(nameof(StoreSettings.ExistingData), existing.ParamName);
    }

    [Fact]
    public void A_checkpoint_interval_without_a_place_for_checkpoints_or_a_log_device_is_refused()
    {
        var inMemory = Assert.Throws<ArgumentException>(
            () => new StoreSettings { CheckpointInterval = TimeSpan.FromSeconds(1) }.Validate());
        Assert.Equal(nameof(StoreSettings.CheckpointInterval), inMemory.ParamName);
        Assert.Contains("cannot take checkpoints", inMemory.Message, StringComparison.Ordinal);

        using var device = new MemoryDevice();
        var noPlace = Assert.Throws<ArgumentException>(
            () => TestStores.Create(new StoreSettings { LogDevice = device, CheckpointInterval = TimeSpan.FromSeconds(1) }));
        Assert.Equal(nameof(StoreSettings.CheckpointInterval), noPlace.ParamName);
    }

    [Fact]
    public void A_checkpoint_directory_or_store_without_a_log_device_is_refused_as_it_would_be_ignored()
    {
        string directory = _directory.NewSubdirectory();
        var byDirectory = Assert.Throws<ArgumentException>(
            () => TestStores.Create(new StoreSettings { CheckpointDirectory = directory }));
        Assert.Equal(nameof(StoreSettings.CheckpointDirectory), byDirectory.ParamName);
        Assert.Empty(Directory.GetFileSystemEntries(directory));

        using var checkpoints = new MemoryCheckpointStore();
        var byStore = Assert.Throws<ArgumentException>(
            () => TestStores.Create(new StoreSettings { CheckpointStore = checkpoints }));
        Assert.Equal(nameof(StoreSettings.CheckpointStore), byStore.ParamName);
    }

    [Fact]
    public void An_index_and_log_memory_beyond_what_the_process_may_use_are_refused_naming_the_bytes_needed()
    {
        var settings = new StoreSettings
        {
            IndexBuckets = StoreSettings.MaxIndexBuckets,
            MemorySizeBytes = StoreSettings.MaxMemorySizeBytes,
        };
        long needed = (StoreSettings.MaxIndexBuckets * 64) + StoreSettings.MaxMemorySizeBytes;
        var refused = Assert.Throws<ArgumentOutOfRangeException>(() => TestStores.Create(settings));
        Assert.Contains($"need {needed} bytes", refused.Message, StringComparison.Ordinal);
        Assert.Equal(needed, refused.ActualValue);

        // What decides is the memory the process may use: the same settings fit a machine that has it.
        settings.ValidateMemory(availableBytes: needed);
        var index = Assert.Throws<ArgumentOutOfRangeException>(() => settings.ValidateMemory(availableBytes: 1L << 30));
        Assert.Equal(nameof(StoreSettings.IndexBuckets), index.ParamName);
    }
}
