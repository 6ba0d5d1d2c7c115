using HybridKV.Checkpoints;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Sessions;

/// <summary>
/// A session holding epoch protection across operations: it still sees its own writes, holds the epoch back exactly
/// until its refresh cadence, and steps outside protection where it waits, so that evictions and checkpoints proceed.
/// </summary>
[Trait("Category", "Operations")]
public sealed class ProtectedScopeTests : IDisposable
{
    private static readonly TimeSpan Deadline = TimeSpan.FromMinutes(2);
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Theory]
    [InlineData(0)]
    [InlineData(-1)]
    [InlineData(Session<long, long, long, long, CountContext?, CountFunctions>.MaxRefreshInterval + 1)]
    public void A_refresh_interval_out_of_range_is_rejected_by_name(int refreshInterval)
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => session.BeginProtectedScope(refreshInterval));
        Assert.Equal("refreshInterval", error.ParamName);
        Assert.Contains("from 1 to 65536", error.Message, StringComparison.Ordinal);
        Assert.False(session.InProtectedScope);
    }

    [Fact]
    public async Task Nested_scopes_and_awaiting_inside_a_scope_fail_clearly()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        session.Upsert(1, 10);
        using (session.BeginProtectedScope())
        {
            var nested = Assert.Throws<InvalidOperationException>(() => session.BeginProtectedScope());
            Assert.Contains("already has an open protected scope", nested.Message, StringComparison.Ordinal);
            await Assert.ThrowsAsync<InvalidOperationException>(async () => await session.ReadAsync(1));
            await Assert.ThrowsAsync<InvalidOperationException>(async () => await session.UpsertAsync(1, 2));
            await Assert.ThrowsAsync<InvalidOperationException>(async () => await session.RMWAsync(1, 2));
            await Assert.ThrowsAsync<InvalidOperationException>(async () => await session.DeleteAsync(1));
            await Assert.ThrowsAsync<InvalidOperationException>(() => session.CompletePendingAsync());
            await Assert.ThrowsAsync<InvalidOperationException>(() => session.WaitForCommitAsync(1));
        }

        // The failed calls took no serial numbers and changed nothing; outside the scope they work.
        Assert.Equal(1, session.LastSerialNo);
        Assert.Equal(10, (await session.ReadAsync(1)).Output);
    }

    [Fact]
    public void Disposing_a_scope_twice_or_a_stale_copy_leaves_a_newer_scope_open()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        ProtectedScope first = session.BeginProtectedScope();
        ProtectedScope copy = first;
        first.Dispose();
        Assert.False(session.InProtectedScope);
        Assert.False(store.Engine.Epoch.IsProtected(session.EpochEntry));

        ProtectedScope second = session.BeginProtectedScope();
        first.Dispose();
        copy.Dispose();
        default(ProtectedScope).Dispose();
        Assert.True(session.InProtectedScope);
        Assert.True(store.Engine.Epoch.IsProtected(session.EpochEntry));
        second.Dispose();
        Assert.False(store.Engine.Epoch.IsProtected(session.EpochEntry));
    }

    [Fact]
    public void A_scope_holds_the_epoch_until_its_refresh_cadence_or_CompletePending()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        using (session.BeginProtectedScope(refreshInterval: 4))
        {
            int ran = 0;
            store.Engine.Epoch.BumpCurrentEpoch(() => ran++);
            for (int i = 1; i <= 3; i++)
            {
                session.Upsert(i, i);
                Assert.Equal(0, ran);
            }

            // The fourth operation is the refresh point.
            session.Upsert(4, 4);
            Assert.Equal(1, ran);

            store.Engine.Epoch.BumpCurrentEpoch(() => ran++);
            session.Upsert(5, 5);
            Assert.Equal(1, ran);
            Assert.True(session.CompletePending());
            Assert.Equal(2, ran);
        }

        using var reader = store.NewSession();
        for (long key = 1; key <= 5; key++)
        {
            Assert.Equal(key, reader.ReadValue(key, out Status status));
            Assert.Equal(Status.Ok, status);
        }
    }

    [Fact]
    public async Task A_scope_over_data_many_times_memory_steps_outside_protection_to_wait()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        const long Keys = 20_000;
        await Task.Run(() =>
        {
            using var session = store.NewSession();
            using (session.BeginProtectedScope(refreshInterval: 1000))
            {
                // Page turns need the head to move, which needs this session's epoch to move: the waits do that.
                session.Preload(Keys, factor: 3);
                for (long k = 0; k < Keys; k += 7)
                {
                    Assert.Equal(Status.Ok, session.RMWNow(k, 1));
                }

                for (long k = 0; k < Keys; k += 5)
                {
                    (Status status, long value) = session.ReadNow(k);
                    Assert.Equal(Status.Ok, status);
                    Assert.Equal((k * 3) + (k % 7 == 0 ? 1 : 0), value);
                }

                Assert.True(session.InProtectedScope);
            }
        }).WaitAsync(Deadline);

        Assert.True(store.Engine.Log.HeadAddress > store.Engine.Log.BeginAddress, "the log never left memory");
    }

    [Fact]
    public async Task A_checkpoint_passes_a_session_that_never_leaves_its_scope_and_commits_its_prefix()
    {
        string directory = _directory.NewSubdirectory();
        var id = Guid.NewGuid();
        CommitPoint committed;
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        {
            using var session = store.NewSession(id);
            using var started = new ManualResetEventSlim();
            var stop = new CancellationTokenSource();
            Task worker = Task.Run(() =>
            {
                using ProtectedScope scope = session.BeginProtectedScope(refreshInterval: 64);
                while (!stop.IsCancellationRequested)
                {
                    if (session.RMW(0, 1) == Status.Pending)
                    {
                        Assert.True(session.CompletePending(wait: true));
                    }

                    if (session.LastSerialNo >= 1000)
                    {
                        started.Set();
                    }
                }
            });

            Assert.True(started.Wait(Deadline));
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver).WaitAsync(Deadline);
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Snapshot).WaitAsync(Deadline);
            committed = session.DurableCommitPoint;
            Assert.True(committed.UntilSerialNo >= 1000, $"the commit covers {committed.UntilSerialNo} operations");
            // Operations after the commit point must be missing after recovery: let the worker run some first.
            Assert.True(SpinWait.SpinUntil(() => session.LastSerialNo > committed.UntilSerialNo + 1000, Deadline));
            await stop.CancelAsync();
            await worker.WaitAsync(Deadline);
            Assert.Equal(committed, session.DurableCommitPoint);
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        Assert.NotNull(await recovered.RecoverAsync());
        using var continued = recovered.ContinueSession(id, out CommitPoint point);
        Assert.Equal(committed, point);
        // Every operation was "add 1 to key 0": the recovered value counts exactly the operations in the prefix.
        Assert.Equal(point.UntilSerialNo - point.ExcludedSerialNos.Count, continued.ReadNow(0).Value);
    }
}
