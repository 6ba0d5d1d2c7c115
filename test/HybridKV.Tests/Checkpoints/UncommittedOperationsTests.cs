using HybridKV.Checkpoints;
using HybridKV.Tests.Support;
using Engine = HybridKV.HybridKVStore<long, long, long, long, HybridKV.Tests.Support.CountContext?,
    HybridKV.Tests.Support.CountFunctions>;
using EngineSession = HybridKV.Sessions.Session<long, long, long, long, HybridKV.Tests.Support.CountContext?,
    HybridKV.Tests.Support.CountFunctions>;

namespace HybridKV.Tests.Checkpoints;

/// <summary>
/// <see cref="HybridKVStore{TKey, TValue, TInput, TOutput, TContext, TFunctions}.HasUncommittedOperations"/>: what lets
/// a host skip the periodic checkpoint of an idle store, and the store-type interface hosts are written against.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class UncommittedOperationsTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private StoreSettings OnDisk() => TestStores.Small() with { LogDirectory = _directory.NewSubdirectory() };

    [Fact]
    public async Task An_operation_is_uncommitted_until_a_checkpoint_holds_it_even_an_update_in_place()
    {
        using var store = TestStores.Create(OnDisk());
        Assert.False(store.HasUncommittedOperations);
        using var session = store.NewSession();
        Assert.False(store.HasUncommittedOperations);

        session.RMW(1, 5);
        Assert.True(store.HasUncommittedOperations);
        await store.TakeCheckpointAsync(CheckpointKind.LogOnly);
        Assert.False(store.HasUncommittedOperations);

        // An update in place moves no tail: the check is by serial number, not by log address.
        session.RMW(1, 5);
        long tail = store.TailAddress;
        session.RMW(1, 5);
        Assert.Equal(tail, store.TailAddress);
        Assert.True(store.HasUncommittedOperations);
        await store.TakeCheckpointAsync(CheckpointKind.LogOnly);
        Assert.False(store.HasUncommittedOperations);
        Assert.Null(store.DeviceError);
    }

    [Fact]
    public async Task A_session_disposed_with_uncommitted_operations_still_counts_until_committed()
    {
        using var store = TestStores.Create(OnDisk());
        using (var session = store.NewSession())
        {
            session.Upsert(3, 4);
        }

        Assert.True(store.HasUncommittedOperations);
        await store.TakeCheckpointAsync();
        Assert.False(store.HasUncommittedOperations);
    }

    [Fact]
    public async Task A_host_written_against_the_interfaces_recovers_and_continues_a_session()
    {
        Guid id = Guid.NewGuid();
        StoreSettings settings = OnDisk();
        using (var first = await OpenAsync<Engine, EngineSession>(settings))
        {
            using EngineSession session = first.NewSession(id);
            session.RMW(7, 2);
            Assert.True(first.HasUncommittedOperations);
            Task committed = session.WaitForCommitAsync(1, CancellationToken.None);
            Assert.False(committed.IsCompleted);
            await first.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver, CancellationToken.None);
            await committed;
            Assert.Equal(1, session.DurableCommitPoint.UntilSerialNo);
        }

        using var second = await OpenAsync<Engine, EngineSession>(settings);
        using EngineSession continued = second.ContinueSession(id, out CommitPoint recovered);
        Assert.Equal(1, recovered.UntilSerialNo);
        Assert.Equal(1, continued.LastSerialNo);
        Assert.False(second.HasUncommittedOperations);
    }

    private static async Task<TStore> OpenAsync<TStore, TSession>(StoreSettings settings)
        where TStore : IHybridKVStore<TStore, TSession>
        where TSession : IHybridKVSession
    {
        TStore store = TStore.Create(settings);
        if (store.IsRecoveryRequired)
        {
            await store.RecoverAsync(null, null, CancellationToken.None);
        }

        return store;
    }
}
