using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>Commit points as sessions see them: exclusions, notification, idle sessions, and the API's edges.</summary>
[Trait("Category", "Checkpoint")]
public sealed class CommitPointTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private static (StoreSettings Settings, FaultInjectingDevice Device) OnHeldDevice(string directory)
    {
        var device = new FaultInjectingDevice(new LocalFileDevice(new LocalFileDeviceOptions
        {
            Directory = Path.Combine(directory, "log"),
            SegmentSize = 1L << 16,
            SectorSize = 4096,
        }));
        return (StoreOnDevice.Settings(device: device) with { CheckpointDirectory = Path.Combine(directory, "checkpoints") },
            device);
    }

    [Fact]
    public async Task An_operation_pending_at_the_CPR_point_is_excluded_from_that_commit_and_covered_by_the_next()
    {
        string directory = _directory.NewSubdirectory();
        (StoreSettings settings, FaultInjectingDevice device) = OnHeldDevice(directory);
        Guid first;
        var id = Guid.NewGuid();
        var notified = new List<CommitPoint>();
        using (device)
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession(id))
        {
            session.Committed += (_, point) => notified.Add(point);
            session.Preload(20_000);
            var release = new TaskCompletionSource();
            device.HoldReads = release.Task;
            var context = new CountContext();
            Assert.Equal(Status.Pending, session.RMW(5, 100, context));
            long pendingSerial = session.LastSerialNo;
            Assert.Equal(Status.Ok, session.Upsert(1, 77));
            Task<bool> waitForPending = session.WaitForCommitAsync(pendingSerial).ContinueWith(_ => true, TaskScheduler.Default);

            // The session is idle and has an operation pending: neither holds up the checkpoint (relaxed CPR).
            first = await store.TakeCheckpointAsync();
            var expected = new CommitPoint(pendingSerial + 1, [pendingSerial]);
            Assert.Equal(expected, session.DurableCommitPoint);
            Assert.Equal(expected, Assert.Single(notified));
            Assert.False(waitForPending.IsCompleted);
            await session.WaitForCommitAsync(pendingSerial - 1);

            release.SetResult();
            device.HoldReads = null;
            Assert.True(await Task.Run(() => session.CompletePending(wait: true)));
            Assert.Equal(1, context.Completions);
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly);
            Assert.True(await waitForPending);
            Assert.Equal(new CommitPoint(pendingSerial + 1, []), session.DurableCommitPoint);
        }

        // The first commit holds the upsert after the pending RMW but not the RMW.
        string copy = _directory.CopyOf(directory);
        (StoreSettings firstSettings, FaultInjectingDevice firstDevice) = OnHeldDevice(copy);
        using (firstDevice)
        using (var store = StoreOnDevice.Create(firstSettings))
        {
            RecoveryResult result = (await store.RecoverAsync(first))!;
            Assert.Equal(first, result.Token);
            using var session = store.ContinueSession(id, out CommitPoint point);
            Assert.Single(point.ExcludedSerialNos);
            Assert.False(point.Includes(point.ExcludedSerialNos[0]));
            Assert.True(point.Includes(point.UntilSerialNo));
            Assert.Equal(5, session.ReadNow(5).Value);
            Assert.Equal(77, session.ReadNow(1).Value);
        }

        (StoreSettings latestSettings, FaultInjectingDevice latestDevice) = OnHeldDevice(directory);
        using (latestDevice)
        using (var store = StoreOnDevice.Create(latestSettings))
        {
            await store.RecoverAsync();
            using var session = store.ContinueSession(id, out CommitPoint point);
            Assert.Empty(point.ExcludedSerialNos);
            Assert.Equal(105, session.ReadNow(5).Value);
        }
    }

    [Fact]
    public async Task With_strict_CPR_the_checkpoint_waits_for_pending_operations_and_excludes_none()
    {
        string directory = _directory.NewSubdirectory();
        (StoreSettings settings, FaultInjectingDevice device) = OnHeldDevice(directory);
        var id = Guid.NewGuid();
        using (device)
        using (var store = StoreOnDevice.Create(settings with { StrictCpr = true }))
        using (var session = store.NewSession(id))
        {
            session.Preload(20_000);
            var release = new TaskCompletionSource();
            device.HoldReads = release.Task;
            Assert.Equal(Status.Pending, session.RMW(5, 100, new CountContext()));
            Assert.Equal(Status.Ok, session.Upsert(1, 77));
            long last = session.LastSerialNo;

            Task<Guid> checkpoint = store.TakeCheckpointAsync();
            // The state machine reaches WAIT-PENDING and stays there while an operation before the CPR point is pending.
            using (var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30)))
            {
                while (store.Engine.State.Phase != CprPhase.WaitPending)
                {
                    await Task.Yield();
                    deadline.Token.ThrowIfCancellationRequested();
                }
            }

            Assert.False(checkpoint.IsCompleted);
            Assert.Equal(CprPhase.WaitPending, store.Engine.State.Phase);
            release.SetResult();
            device.HoldReads = null;
            Assert.True(await Task.Run(() => session.CompletePending(wait: true)));
            await checkpoint;
            Assert.Equal(new CommitPoint(last, []), session.DurableCommitPoint);
        }

        (StoreSettings again, FaultInjectingDevice againDevice) = OnHeldDevice(directory);
        using (againDevice)
        using (var store = StoreOnDevice.Create(again))
        {
            await store.RecoverAsync();
            using var session = store.ContinueSession(id, out CommitPoint point);
            Assert.Empty(point.ExcludedSerialNos);
            Assert.Equal(105, session.ReadNow(5).Value);
            Assert.Equal(77, session.ReadNow(1).Value);
        }
    }

    [Fact]
    public async Task Recovering_an_older_checkpoint_deletes_the_newer_ones_whose_log_it_overwrites()
    {
        string directory = _directory.NewSubdirectory();
        Guid first;
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        using (var session = store.NewSession())
        {
            session.Preload(1000);
            first = await store.TakeCheckpointAsync();
            session.Preload(1000, factor: 2);
            await store.TakeCheckpointAsync();
        }

        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        {
            Assert.Equal(first, (await store.RecoverAsync(first))!.Token);
            using var session = store.NewSession();
            session.Preload(10, factor: 3);
        }

        using var again = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        Assert.Equal(first, (await again.RecoverAsync())!.Token);
        using var reader = again.NewSession();
        Assert.Equal(999, reader.ReadNow(999).Value);
    }

    [Fact]
    public async Task Continuing_a_closed_session_on_a_live_store_goes_on_from_its_last_operation()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        var id = Guid.NewGuid();
        using (var session = store.NewSession(id))
        {
            session.Preload(10);
            await store.TakeCheckpointAsync();
            session.Upsert(100, 1);
        }

        using var continued = store.ContinueSession(id, out CommitPoint point);
        Assert.Equal(new CommitPoint(10, []), point);
        Assert.Equal(12, continued.NextSerialNo);
        await store.TakeCheckpointAsync(CheckpointKind.LogOnly);
        Assert.Equal(new CommitPoint(11, []), continued.DurableCommitPoint);
    }

    [Fact]
    public async Task A_second_checkpoint_request_waits_for_the_running_one_and_takes_its_own()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(5000);
        Task<Guid> one = store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
        Task<Guid> two = store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
        Guid[] tokens = await Task.WhenAll(one, two);
        Assert.NotEqual(tokens[0], tokens[1]);
        Assert.Equal(new CommitPoint(5000, []), session.DurableCommitPoint);
    }

    [Fact]
    public async Task Checkpoint_and_recovery_misuse_gets_clear_errors()
    {
        using (var inMemory = TestStores.Create(TestStores.Small()))
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(() => inMemory.TakeCheckpointAsync());
            Assert.Contains("log device", error.Message, StringComparison.Ordinal);
        }

        string directory = _directory.NewSubdirectory();
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        {
            await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => store.TakeCheckpointAsync((CheckpointKind)7));
            await Assert.ThrowsAsync<ArgumentOutOfRangeException>(
                () => store.TakeCheckpointAsync(CheckpointKind.Full, (CheckpointMode)7));
            using var session = store.NewSession();
            session.Upsert(1, 1);
            Assert.Throws<ArgumentOutOfRangeException>(() => { _ = session.WaitForCommitAsync(2); });
            await store.TakeCheckpointAsync();
            var late = await Assert.ThrowsAsync<InvalidOperationException>(() => store.RecoverAsync());
            Assert.Contains("new store", late.Message, StringComparison.Ordinal);
        }

        // A store of other value types refuses the log instead of misreading it.
        var mismatch = Assert.Throws<InvalidOperationException>(
            () => new HybridKVStore<long, Guid, long, long, CountContext?, GuidFunctions>(StoreOnDevice.Settings(directory)));
        Assert.Contains("value size: 16 bytes in this store, 8 bytes", mismatch.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => new StoreSettings { CheckpointsToKeep = -1 }.Validate());
        Assert.Throws<ArgumentOutOfRangeException>(
            () => new StoreSettings { CheckpointInterval = TimeSpan.Zero }.Validate());
    }

    [Fact]
    public async Task Periodic_checkpoints_commit_on_their_own_and_start_only_once_the_store_is_in_use()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory) with { CheckpointInterval = TimeSpan.FromMilliseconds(10) };
        using (var store = StoreOnDevice.Create(settings))
        {
            Assert.False(store.PeriodicCheckpointsStarted);
            using var session = store.NewSession();
            Assert.True(store.PeriodicCheckpointsStarted);
            session.Upsert(1, 42);
            await session.WaitForCommitAsync(1).WaitAsync(TimeSpan.FromSeconds(30));
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        Assert.NotNull(await recovered.RecoverAsync());
        using var reader = recovered.NewSession();
        Assert.Equal(42, reader.ReadNow(1).Value);
    }

    [Fact]
    public async Task Periodic_checkpoints_skip_the_ticks_of_an_idle_store_and_resume_with_its_next_operation()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory) with { CheckpointInterval = TimeSpan.FromMilliseconds(5) };
        using var store = StoreOnDevice.Create(settings);
        using var session = store.NewSession();
        session.Upsert(1, 42);
        await session.WaitForCommitAsync(1).WaitAsync(TimeSpan.FromSeconds(30));
        long committed = Committed(store);
        long skipped = store.PeriodicTicksSkipped;

        // Nothing issued since: each tick finds everything durable, and no checkpoint copies the log again.
        Assert.True(SpinWait.SpinUntil(() => store.PeriodicTicksSkipped >= skipped + 3, TimeSpan.FromSeconds(30)));
        Assert.Equal(committed, Committed(store));

        session.Upsert(2, 43);
        await session.WaitForCommitAsync(2).WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(Committed(store) > committed);
    }

    private static long Committed(HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store) =>
        store.CheckpointsCommitted!.FoldOvers + store.CheckpointsCommitted.Snapshots;

    /// <summary>Long keys, Guid values: a record layout other than the count store's.</summary>
    private struct GuidFunctions : IFunctions<long, Guid, long, long, CountContext?>
    {
        public readonly long GetHashCode64(in long key) => KeyHashing.Mix(key);

        public readonly bool KeyEquals(in long first, in long second) => first == second;

        public readonly void SingleReader(in long key, in long input, in Guid value, ref long output) => output = 0;

        public readonly void ConcurrentReader(in long key, in long input, in Guid value, ref long output) => output = 0;

        public readonly void SingleWriter(in long key, in Guid source, ref Guid destination) => destination = source;

        public readonly void ConcurrentWriter(in long key, in Guid source, ref Guid destination) => destination = source;

        public readonly void InitialUpdater(in long key, in long input, ref Guid value) => value = Guid.Empty;

        public readonly void InPlaceUpdater(in long key, in long input, ref Guid value)
        {
        }

        public readonly void CopyUpdater(in long key, in long input, in Guid oldValue, ref Guid newValue) =>
            newValue = oldValue;

        public readonly void ReadCompletionCallback(
            in long key, in long input, in long output, CountContext? context, Status status)
        {
        }

        public readonly void RMWCompletionCallback(in long key, in long input, CountContext? context, Status status)
        {
        }

        public readonly void DeleteCompletionCallback(in long key, CountContext? context, Status status)
        {
        }
    }
}
