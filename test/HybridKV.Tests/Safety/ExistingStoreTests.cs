using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>
/// A store created over a directory that already holds a store (issue 17, item 1): it is recovered, or refused until
/// the user says to delete it; the log of a committed checkpoint is never overwritten.
/// </summary>
[Trait("Category", "Safety")]
public sealed class ExistingStoreTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_new_store_over_a_directory_with_checkpoints_refuses_every_use_until_recovered_and_changes_nothing()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        await SafetyStores.WriteCheckpointedAsync(settings);
        SortedDictionary<string, string> before = SafetyStores.Snapshot(directory);

        using (var careless = TestStores.Create(settings))
        {
            Assert.True(careless.IsRecoveryRequired);
            var refused = Assert.Throws<InvalidOperationException>(() => careless.NewSession());
            Assert.Contains("RecoverAsync", refused.Message, StringComparison.Ordinal);
            Assert.Contains(Path.Combine(directory, "log"), refused.Message, StringComparison.Ordinal);
            Assert.Contains("1 checkpoint(s)", refused.Message, StringComparison.Ordinal);
            Assert.Throws<InvalidOperationException>(() => careless.NewSession(Guid.NewGuid()));
            Assert.Throws<InvalidOperationException>(() => careless.ContinueSession(Guid.NewGuid(), out _));
            await Assert.ThrowsAsync<InvalidOperationException>(() => careless.TakeCheckpointAsync());
            await Assert.ThrowsAsync<InvalidOperationException>(() => careless.ShiftBeginAddressAsync(careless.BeginAddress));
        }

        Assert.Equal(before, SafetyStores.Snapshot(directory));
        using var recovered = TestStores.Create(settings);
        Assert.NotNull(await recovered.RecoverAsync());
        Assert.False(recovered.IsRecoveryRequired);
        SafetyStores.AssertHoldsCheckpointed(recovered);
    }

    [Fact]
    public async Task A_store_with_periodic_checkpoints_over_an_existing_store_takes_none_before_it_is_recovered()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        await SafetyStores.WriteCheckpointedAsync(settings);
        SortedDictionary<string, string> before = SafetyStores.Snapshot(directory);
        using (var careless = TestStores.Create(settings with { CheckpointInterval = TimeSpan.FromMilliseconds(1) }))
        {
            Assert.Throws<InvalidOperationException>(() => careless.NewSession());
            Assert.False(careless.PeriodicCheckpointsStarted);
        }

        Assert.Equal(before, SafetyStores.Snapshot(directory));
    }

    [Fact]
    public async Task ExistingData_Delete_deletes_the_old_log_and_checkpoints_and_starts_empty()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        await SafetyStores.WriteCheckpointedAsync(settings);
        string[] oldCheckpoints = Directory.GetDirectories(Path.Combine(directory, "checkpoints"));
        Assert.Single(oldCheckpoints);

        using (var fresh = TestStores.Create(settings with { ExistingData = ExistingDataPolicy.Delete }))
        {
            Assert.False(fresh.IsRecoveryRequired);
            Assert.Empty(Directory.GetDirectories(Path.Combine(directory, "checkpoints")));
            Assert.Empty(SafetyStores.SegmentFiles(directory));
            using var session = fresh.NewSession();
            Assert.Equal(Status.NotFound, session.ReadNow(5).Status);
            session.Upsert(5, 7);
            await fresh.TakeCheckpointAsync();
        }

        using var reopened = TestStores.Create(settings);
        Assert.NotNull(await reopened.RecoverAsync());
        using var reader = reopened.NewSession();
        Assert.Equal((Status.Ok, 7L), reader.ReadNow(5));
        Assert.Equal(Status.NotFound, reader.ReadNow(6).Status);
    }

    [Fact]
    public async Task A_log_of_which_no_checkpoint_was_committed_is_erased_by_recovery_and_the_store_starts_empty()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        using (var crashed = TestStores.Create(settings))
        using (var session = crashed.NewSession())
        {
            session.Preload(20_000);
        }

        Assert.True(SafetyStores.SegmentFiles(directory).Length > 1);
        using var store = TestStores.Create(settings);
        Assert.True(store.IsRecoveryRequired);
        Assert.Null(await store.RecoverAsync());
        Assert.Empty(SafetyStores.SegmentFiles(directory));
        using var reader = store.NewSession();
        Assert.Equal(Status.NotFound, reader.ReadNow(1).Status);
        reader.Upsert(1, 2);
        Assert.Equal((Status.Ok, 2L), reader.ReadNow(1));
    }
}
