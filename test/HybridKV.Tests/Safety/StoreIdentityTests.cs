using System.Text;
using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>
/// What the bytes mean is recorded and checked (issue 17, item 3): a store of other types, geometry, hash function or
/// format is refused with both values named and nothing on disk changed, and a checkpoint of another log is never
/// recovered.
/// </summary>
[Trait("Category", "Safety")]
public sealed class StoreIdentityTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public Task A_store_of_another_value_type_of_the_same_size_is_refused_and_changes_nothing() =>
        AssertRefusedAndUnchangedAsync(
            directory => new HybridKVStore<long, double, double, double, Empty, DoubleFunctions>(
                StoreOnDevice.Settings(directory)),
            "value type: System.Double in this store, System.Int64 in the log");

    [Fact]
    public Task A_changed_log_segment_size_is_refused_naming_both_sizes() =>
        AssertRefusedAndUnchangedAsync(
            directory => TestStores.Create(StoreOnDevice.Settings(directory) with { LogSegmentSizeBits = 17 }),
            "log segment size (LogSegmentSizeBits): 2^17 bytes in this store, 2^16 bytes");

    [Fact]
    public Task A_changed_page_size_is_refused_naming_both_sizes() =>
        AssertRefusedAndUnchangedAsync(
            directory => TestStores.Create(StoreOnDevice.Settings(directory) with { PageSizeBits = 13 }),
            "page size (PageSizeBits): 2^13 bytes in this store, 2^12 bytes");

    [Fact]
    public Task A_changed_hash_function_is_refused_because_every_key_would_become_unreachable() =>
        AssertRefusedAndUnchangedAsync(
            directory => TestStores.Create(StoreOnDevice.Settings(directory), HashMode.TwinsAMillionApart),
            "key hash of the probe keys");

    [Fact]
    public async Task A_log_of_a_newer_format_is_refused_naming_both_formats()
    {
        string directory = _directory.NewSubdirectory();
        await SafetyStores.WriteCheckpointedAsync(StoreOnDevice.Settings(directory));
        string label = Path.Combine(directory, "log", "hlog.label");
        StoreIdentity written = ChecksummedJson.TryUnwrap<StoreIdentity>(
            File.ReadAllBytes(label), CheckpointMetadata.JsonOptions, out _)!;
        File.WriteAllBytes(label, ChecksummedJson.Wrap(written with { Format = StoreIdentity.CurrentFormat + 1 }, CheckpointMetadata.JsonOptions));
        SortedDictionary<string, string> before = SafetyStores.Snapshot(directory);

        var refused = Assert.Throws<InvalidOperationException>(() => TestStores.Create(StoreOnDevice.Settings(directory)));
        Assert.Contains($"format: {StoreIdentity.CurrentFormat} in this store, {StoreIdentity.CurrentFormat + 1} in the log",
            refused.Message, StringComparison.Ordinal);
        Assert.Equal(before, SafetyStores.Snapshot(directory));
    }

    [Fact]
    public async Task A_damaged_label_is_refused_naming_the_device()
    {
        string directory = _directory.NewSubdirectory();
        await SafetyStores.WriteCheckpointedAsync(StoreOnDevice.Settings(directory));
        string label = Path.Combine(directory, "log", "hlog.label");
        string text = File.ReadAllText(label);
        File.WriteAllText(label, text.Replace("System.Int64", "System.Int65", StringComparison.Ordinal));

        var refused = Assert.Throws<InvalidDataException>(() => TestStores.Create(StoreOnDevice.Settings(directory)));
        Assert.Contains(Path.Combine(directory, "log"), refused.Message, StringComparison.Ordinal);
        Assert.Contains("checksum does not match", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Segment_files_without_a_label_are_refused_as_a_log_of_unknown_format()
    {
        string directory = _directory.NewSubdirectory();
        await SafetyStores.WriteCheckpointedAsync(StoreOnDevice.Settings(directory));
        File.Delete(Path.Combine(directory, "log", "hlog.label"));

        var refused = Assert.Throws<InvalidDataException>(() => TestStores.Create(StoreOnDevice.Settings(directory)));
        Assert.Contains("no label", refused.Message, StringComparison.Ordinal);
        Assert.Contains(Path.Combine(directory, "log"), refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_store_never_recovers_the_checkpoints_of_another_store_in_a_shared_checkpoint_directory()
    {
        string shared = _directory.NewSubdirectory();
        string first = _directory.NewSubdirectory();
        string second = _directory.NewSubdirectory();
        StoreSettings firstSettings = StoreOnDevice.Settings(first) with { CheckpointDirectory = shared };
        await SafetyStores.WriteCheckpointedAsync(firstSettings);
        SortedDictionary<string, string> before = SafetyStores.Snapshot(shared);

        using (var other = TestStores.Create(StoreOnDevice.Settings(second) with { CheckpointDirectory = shared }))
        {
            Assert.Throws<InvalidOperationException>(() => other.NewSession());
            var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => other.RecoverAsync());
            Assert.Contains("No checkpoint in", refused.Message, StringComparison.Ordinal);
            Assert.Contains("belongs to this store's log", refused.Message, StringComparison.Ordinal);
            Assert.Throws<InvalidOperationException>(() => other.NewSession());
        }

        Assert.Equal(before, SafetyStores.Snapshot(shared));
        using var owner = TestStores.Create(firstSettings);
        Assert.NotNull(await owner.RecoverAsync());
        SafetyStores.AssertHoldsCheckpointed(owner);
    }

    [Fact]
    public async Task A_checkpoint_of_another_log_among_a_stores_own_is_skipped_and_kept()
    {
        string first = _directory.NewSubdirectory();
        string second = _directory.NewSubdirectory();
        using (var store = TestStores.Create(StoreOnDevice.Settings(second)))
        using (var session = store.NewSession())
        {
            session.Upsert(1, 111);
            await store.TakeCheckpointAsync();
        }

        // A newer checkpoint of another store lands in this store's checkpoint directory (copied by hand).
        await SafetyStores.WriteCheckpointedAsync(StoreOnDevice.Settings(first));
        string foreign = Directory.GetDirectories(Path.Combine(first, "checkpoints")).Single();
        string copy = Path.Combine(second, "checkpoints", Path.GetFileName(foreign));
        Directory.CreateDirectory(copy);
        foreach (string file in Directory.GetFiles(foreign))
        {
            File.Copy(file, Path.Combine(copy, Path.GetFileName(file)));
        }

        using var recovering = TestStores.Create(StoreOnDevice.Settings(second));
        RecoveryResult? result = await recovering.RecoverAsync();
        Assert.NotNull(result);
        Assert.Contains(result.Skipped, s => s.Contains("belongs to log", StringComparison.Ordinal));
        using var reader = recovering.NewSession();
        Assert.Equal((Status.Ok, 111L), reader.ReadNow(1));
        Assert.Equal(Status.NotFound, reader.ReadNow(2).Status);
        Assert.True(Directory.Exists(copy), "the other store's checkpoint was deleted");
    }

    /// <summary>A store that differs from the one that wrote the directory is refused when it is created, with the
    /// difference named, and leaves every file as it was: the right store still recovers it.</summary>
    private async Task AssertRefusedAndUnchangedAsync(Func<string, IDisposable> create, string difference)
    {
        string directory = _directory.NewSubdirectory();
        await SafetyStores.WriteCheckpointedAsync(StoreOnDevice.Settings(directory));
        SortedDictionary<string, string> before = SafetyStores.Snapshot(directory);

        var refused = Assert.Throws<InvalidOperationException>(() => create(directory).Dispose());
        Assert.Contains(difference, refused.Message, StringComparison.Ordinal);
        Assert.Equal(before, SafetyStores.Snapshot(directory));
        await AssertStillRecoversAsync(directory);
    }

    private static async Task AssertStillRecoversAsync(string directory)
    {
        using var store = TestStores.Create(StoreOnDevice.Settings(directory));
        Assert.NotNull(await store.RecoverAsync());
        SafetyStores.AssertHoldsCheckpointed(store);
    }
}
