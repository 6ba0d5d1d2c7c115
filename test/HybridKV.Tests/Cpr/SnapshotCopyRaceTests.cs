using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>
/// While a snapshot copies the log, an update of a record of the committed version copies it to the tail; once the
/// record's page is copied, updates go on in place. A copy decided before that must not lose an in-place update
/// decided after it (the lost-update anomaly of FASTER §6.2, in the other direction): the in-place update waits until
/// no copy of the record can still be running.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class SnapshotCopyRaceTests
{
    // On the fifth page of 4 KiB (records of 32 bytes): past the two pages the copy stages ahead of a held write.
    private const long Key = 600;

    [Fact]
    public async Task An_update_in_place_after_the_snapshot_copied_a_page_does_not_race_a_copy_decided_before()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        var writes = new TaskCompletionSource();
        var checkpoints = new GatedCheckpointStore(new MemoryCheckpointStore()) { HoldSnapshotWrites = writes.Task };
        StoreSettings settings = SettingsWith(device, checkpoints);
        using var store = new HybridKVStore<long, long, long, long, Empty, HeldCopyFunctions>(settings);
        using var copying = store.NewSession();
        using var updating = store.NewSession();
        FillFivePages(copying);

        Task<Guid> checkpoint = store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
        var held = HeldCopyFunctions.Hold();
        try
        {
            // The capture has not copied the page yet: an RMW copies the record to the tail, and stops in its callback.
            await checkpoints.SnapshotWriteReached.WaitAsync(TimeSpan.FromMinutes(1));
            Task<Status> copy = Task.Run(() =>
            {
                Status status = copying.RMW(Key, 1);
                copying.CompletePending(wait: true);
                return status;
            });
            await held.Entered.WaitAsync(TimeSpan.FromMinutes(1));

            // The capture copies the page and ends; an update decided now must not change the record the copy read.
            writes.TrySetResult();
            Assert.True(SpinWait.SpinUntil(() => CopiedEverything(store), TimeSpan.FromMinutes(1)));
            Status update = updating.RMW(Key, 10);

            held.Release();
            Assert.Equal(Status.Ok, await copy.WaitAsync(TimeSpan.FromMinutes(1)));
            await Task.Run(() => updating.CompletePending(wait: true)).WaitAsync(TimeSpan.FromMinutes(1));
            Assert.True(update is Status.Ok or Status.Pending, $"RMW: {update}");
            await checkpoint.WaitAsync(TimeSpan.FromMinutes(1));
        }
        finally
        {
            writes.TrySetResult();
            held.Release();
            // A hold no copy took (the test failed before) must not stop a later test's copy.
            HeldCopyFunctions.Unhold();
        }

        long value = 0;
        Assert.Equal(Status.Ok, updating.Read(Key, ref value));
        Assert.Equal(11, value);
    }

    [Fact]
    public async Task Updates_of_a_page_the_snapshot_has_copied_go_in_place_while_a_later_page_is_copied_to_the_tail()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        var writes = new TaskCompletionSource();
        var checkpoints = new GatedCheckpointStore(new MemoryCheckpointStore()) { HoldSnapshotWrites = writes.Task };
        StoreSettings settings = SettingsWith(device, checkpoints);
        using (var store = new HybridKVStore<long, long, long, long, Empty, HeldCopyFunctions>(settings))
        using (var session = store.NewSession())
        {
            FillFivePages(session);

            Task<Guid> checkpoint = store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
            try
            {
                // The first page's write is held: that page and the next are in the staging buffers, key 600's is not.
                await checkpoints.SnapshotWriteReached.WaitAsync(TimeSpan.FromMinutes(1));
                long tail = store.TailAddress;
                await Task.Run(() =>
                {
                    session.RMW(1, 10);
                    session.CompletePending(wait: true);
                }).WaitAsync(TimeSpan.FromMinutes(1));
                Assert.Equal(tail, store.TailAddress);

                await Task.Run(() =>
                {
                    session.RMW(Key, 10);
                    session.CompletePending(wait: true);
                }).WaitAsync(TimeSpan.FromMinutes(1));
                Assert.True(store.TailAddress > tail, "The record of a page not copied yet is copied to the tail.");
                Assert.False(checkpoint.IsCompleted);
            }
            finally
            {
                writes.TrySetResult();
            }

            await checkpoint.WaitAsync(TimeSpan.FromMinutes(1));
            long value = 0;
            Assert.Equal(Status.Ok, session.Read(1, ref value));
            Assert.Equal(10, value);
            Assert.Equal(Status.Ok, session.Read(Key, ref value));
            Assert.Equal(10, value);
        }

        // The snapshot holds the committed version: neither update, though one changed its page in memory after the copy.
        using var recovered = StoreOnDevice.Create(settings);
        Assert.NotNull(await recovered.RecoverAsync());
        using var reader = recovered.NewSession();
        Assert.Equal((Status.Ok, 0L), reader.ReadNow(1));
        Assert.Equal((Status.Ok, 0L), reader.ReadNow(Key));
    }

    /// <summary>16 pages of 4 KiB in memory, 8 mutable: the snapshot stages two pages ahead of a held write.</summary>
    private static StoreSettings SettingsWith(MemoryDevice device, GatedCheckpointStore checkpoints) =>
        StoreOnDevice.Settings(device: device) with { CheckpointStore = checkpoints };

    /// <summary>Five pages of records, in the mutable region: at rest every update of them is in place.</summary>
    private static void FillFivePages(Session<long, long, long, long, Empty, HeldCopyFunctions> session)
    {
        for (long k = 0; k < 640; k++)
        {
            session.Upsert(k, 0);
        }
    }

    private static bool CopiedEverything(HybridKVStore<long, long, long, long, Empty, HeldCopyFunctions> store) =>
        store.Engine.State.Phase == CprPhase.Rest ||
        store.Engine.Snapshot.Of(store.Engine.CommitStartAddress - 1) != SnapshotProgress.Standing.NotCopied;

    /// <summary>Long counters; a copy of <see cref="Key"/>'s record stops in its callback while a test holds it.</summary>
    private readonly struct HeldCopyFunctions : IFunctions<long, long, long, long, Empty>
    {
        private static Gate? s_gate;

        public static Gate Hold() => s_gate = new Gate();

        public static void Unhold() => s_gate = null;

        public long GetHashCode64(in long key) => KeyHashing.HashBytes(in key);

        public bool KeyEquals(in long first, in long second) => first == second;

        public void SingleReader(in long key, in long input, in long value, ref long output) => output = value;

        public void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
            output = Volatile.Read(in value);

        public void SingleWriter(in long key, in long source, ref long destination) => destination = source;

        public void ConcurrentWriter(in long key, in long source, ref long destination) =>
            Volatile.Write(ref destination, source);

        public void InitialUpdater(in long key, in long input, ref long value) => value = input;

        public void InPlaceUpdater(in long key, in long input, ref long value) => Interlocked.Add(ref value, input);

        public void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue)
        {
            long old = oldValue;
            if (key == Key && Interlocked.Exchange(ref s_gate, null) is { } gate)
            {
                gate.Wait();
            }

            // The value as the copy read it before it was held: an update in place meanwhile is not in it.
            newValue = old + input;
        }

        public void ReadCompletionCallback(in long key, in long input, in long output, Empty context, Status status)
        {
        }

        public void RMWCompletionCallback(in long key, in long input, Empty context, Status status)
        {
        }

        public void DeleteCompletionCallback(in long key, Empty context, Status status)
        {
        }
    }

    private sealed class Gate
    {
        private readonly TaskCompletionSource _entered = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly TaskCompletionSource _released = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task Entered => _entered.Task;

        public void Wait()
        {
            _entered.TrySetResult();
            _released.Task.Wait(TimeSpan.FromMinutes(1));
        }

        public void Release() => _released.TrySetResult();
    }
}
