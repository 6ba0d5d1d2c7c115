using FsCheck;
using FsCheck.Fluent;
using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Index;
using HybridKV.Operations;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Batched reads (issue 19) return exactly what one read at a time returns: values from the mutable and read-only
/// regions, keys never written or deleted, and records on the device (pending, finished by CompletePending), for any
/// batch length across the prefetch groups, inside a protected scope, while the index doubles, and under strict CPR.
/// Each key is read from the chain its prefetch found, so a chain that compaction moved meanwhile is looked up again.
/// </summary>
[Trait("Category", "Operations")]
public sealed class ReadBatchTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void A_batch_reads_what_single_reads_read_in_memory_on_the_device_and_for_absent_keys()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(6_000, factor: 7);
        for (long k = 0; k < 6_000; k += 10)
        {
            session.Delete(k);
        }

        Gen<long[]> batches = Gen.Choose(0, 8_000).Select(k => (long)k).ArrayOf().Select(a => a.Take(70).ToArray());
        Prop.ForAll(Arb.From(batches), keys =>
        {
            var outputs = new long[keys.Length];
            var statuses = new Status[keys.Length];
            session.Read(keys, outputs, statuses);
            Assert.True(session.CompletePending(wait: true));
            for (int i = 0; i < keys.Length; i++)
            {
                long k = keys[i];
                (Status expected, long value) = k < 6_000 && k % 10 != 0 ? (Status.Ok, k * 7) : (Status.NotFound, 0L);
                if (statuses[i] == Status.Pending)
                {
                    // Finished by CompletePending: read the key again, now that nothing of this session is pending.
                    Assert.Equal(expected == Status.Ok ? (Status.Ok, value) : (Status.NotFound, 0L), session.ReadOrZeroNow(k));
                    continue;
                }

                Assert.Equal(expected, statuses[i]);
                if (expected == Status.Ok)
                {
                    Assert.Equal(value, outputs[i]);
                }
            }

            return true;
        }).QuickCheckThrowOnFailure();
    }

    [Fact]
    public void A_batch_reports_records_on_the_device_to_the_completion_callback_as_a_single_read_does()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(6_000, factor: 3);
        long[] keys = [0, 1, 2, 5_999, 5_998, 7_000];
        var outputs = new long[keys.Length];
        var statuses = new Status[keys.Length];
        session.Read(keys, outputs, statuses);
        Assert.Equal([Status.Pending, Status.Pending, Status.Pending, Status.Ok, Status.Ok, Status.NotFound], statuses);
        Assert.Equal([5_999 * 3L, 5_998 * 3L], outputs[3..5]);
        Assert.True(session.CompletePending(wait: true));
    }

    [Fact]
    public async Task A_batch_inside_a_protected_scope_and_while_the_index_doubles_reads_every_key()
    {
        const long Keys = 2_048;
        using var store = TestStores.Create(StoreOnDevice.GrowableIndexSettings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(Keys, factor: 3);
        long[] keys = [.. Enumerable.Range(0, (int)Keys + 100).Select(k => (long)k)];
        var outputs = new long[keys.Length];
        var statuses = new Status[keys.Length];

        // Held in its resizing phase: buckets are found through both the old and the new index.
        var hold = new ResizeHold(store.Engine.Growth, ResizePhase.Resizing);
        Task<bool> growing = store.GrowIndexAsync();
        await hold.Reached;
        session.Read(keys, outputs, statuses);
        AssertReadAll(keys, outputs, statuses, factor: 3, present: Keys);

        hold.Release();
        Assert.True(await growing);
        Array.Clear(outputs);
        using (session.BeginProtectedScope())
        {
            session.Read(keys, outputs, statuses);
        }

        AssertReadAll(keys, outputs, statuses, factor: 3, present: Keys);
    }

    [Fact]
    public async Task Under_strict_CPR_a_batch_during_a_checkpoint_first_finishes_the_operations_pending_before_it()
    {
        string directory = _directory.NewSubdirectory();
        using var device = new FaultInjectingDevice(new LocalFileDevice(new LocalFileDeviceOptions
        {
            Directory = Path.Combine(directory, "log"),
            SegmentSize = 1L << 16,
            SectorSize = 4096,
        }));
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with
        {
            CheckpointDirectory = Path.Combine(directory, "checkpoints"),
            StrictCpr = true,
        });
        using var session = store.NewSession();
        session.Preload(20_000);
        var release = new TaskCompletionSource();
        device.HoldReads = release.Task;
        var rmw = new CountContext();
        Assert.Equal(Status.Pending, session.RMW(5, 100, rmw));
        Task<Guid> checkpoint = store.TakeCheckpointAsync();
        using (var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30)))
        {
            while (store.Engine.State.Phase != CprPhase.WaitPending)
            {
                await Task.Yield();
                deadline.Token.ThrowIfCancellationRequested();
            }
        }

        // The RMW's read may land now, but only CompletePending finishes it: the batch must call it before reading on.
        device.HoldReads = null;
        release.SetResult();
        long[] keys = [19_999, 19_998, 5];
        var outputs = new long[keys.Length];
        var statuses = new Status[keys.Length];
        session.Read(keys, outputs, statuses);

        Assert.Equal([Status.Ok, Status.Ok, Status.Ok], statuses);
        Assert.Equal([19_999L, 19_998L, 105L], outputs);
        Assert.Equal(0, session.PendingCount);
        await checkpoint;
        Assert.Empty(session.DurableCommitPoint.ExcludedSerialNos);
    }

    [Fact]
    public async Task A_read_from_a_chain_found_before_compaction_moved_its_key_forward_looks_the_key_up_again()
    {
        // No memory compactor: copying a page's live records back to the tail in the background as it leaves memory,
        // it could bring key 9's copy back into memory behind the test's back (seen once in the suite under load).
        using var store = StoreOnDevice.Create(
            StoreOnDevice.Settings(_directory.NewSubdirectory()) with { MemoryCompactionMaxLiveFraction = 0 });
        using var session = store.NewSession();
        session.Preload(6_000, factor: 3);
        const long Key = 7;
        StoreEngine<long, long, long, long, CountContext?, CountFunctions> engine = store.Engine;
        long chain = engine.PrefetchRecord(engine.PrefetchBucket(Key));
        Assert.True(chain < store.HeadAddress);

        // Key 7 is live: compaction copies it forward, swings its entry, and moves the begin address past the chain.
        await store.CompactAsync(store.HeadAddress);
        Assert.True(chain < store.BeginAddress);

        long output = 0;
        Assert.Equal(OperationStatus.RetryNow, engine.InternalRead(Key, 0, ref output, chain, out _));
        Assert.Equal((Status.Ok, Key * 3), session.ReadNow(Key));

        // A key whose entry still leads below the begin address is gone: here the log was cut without compaction.
        const long Other = 9;
        long copied = engine.PrefetchRecord(engine.PrefetchBucket(Other));
        Assert.True(copied < store.HeadAddress);
        await store.ShiftBeginAddressAsync(store.HeadAddress);
        Assert.True(copied < store.BeginAddress);
        Assert.Equal(OperationStatus.NotFound, engine.InternalRead(Other, 0, ref output, copied, out _));
        Assert.Equal(Status.NotFound, session.ReadNow(Other).Status);
    }

    [Fact]
    public async Task A_read_pending_on_the_device_while_compaction_copies_its_key_forward_finds_the_copy()
    {
        // Keys a million apart share a chain: key 1's newest record lies below key 1,000,001's.
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()), HashMode.TwinsAMillionApart);
        using var session = store.NewSession();
        long until = WriteTwinChain(session, store);
        Assert.True(until < store.HeadAddress);

        // Decided on the twin's record (on the device, above the compaction's end); the chain then leads below it.
        var context = new CountContext();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(1, 0, ref output, context));

        // Key 1's record is copied forward, its entry swung, and the begin address moved past the record.
        await store.CompactAsync(until);
        Assert.True(store.BeginAddress >= until);

        Assert.True(session.CompletePending(wait: true));
        Assert.Equal((1, Status.Ok, 11L), (context.Completions, context.LastStatus, context.Output));
    }

    [Fact]
    public async Task A_read_through_the_read_cache_to_a_chain_compaction_moved_looks_the_key_up_again()
    {
        using var store = StoreOnDevice.Create(
            StoreOnDevice.Settings(_directory.NewSubdirectory()) with { ReadCacheBytes = 1L << 20 }, HashMode.TwinsAMillionApart);
        using var session = store.NewSession();
        long until = WriteTwinChain(session, store);
        // The twin's record comes into the read cache; key 1's chain leads through it.
        Assert.Equal((Status.Ok, 22L), session.ReadNow(1_000_001));
        StoreEngine<long, long, long, long, CountContext?, CountFunctions> engine = store.Engine;
        long chain = engine.PrefetchRecord(engine.PrefetchBucket(1L));
        Assert.True(chain >= until && chain < store.HeadAddress);

        await store.CompactAsync(until);
        long output = 0;
        Assert.Equal(OperationStatus.RetryNow, engine.InternalRead(1, 0, ref output, chain, out _));
        Assert.Equal((Status.Ok, 11L), session.ReadNow(1));
    }

    /// <summary>
    /// With <see cref="HashMode.TwinsAMillionApart"/>: key 1 (value 11), then key 1,000,001 (value 22) on the same chain
    /// thousands of records later, then as many again, so both lie on the device. Returns the start of the page of
    /// the twin's record: a compaction up to there copies key 1 forward and leaves the twin where it is.
    /// </summary>
    private static long WriteTwinChain(CountSession session, CountStore store)
    {
        session.Upsert(1, 11);
        session.Preload(6_000, factor: 1, first: 2);
        session.Upsert(1_000_001, 22);
        long twin = store.TailAddress;
        session.Preload(6_000, factor: 1, first: 6_002);
        return twin & ~(StoreOnDevice.PageSize - 1);
    }

    private static void AssertReadAll(long[] keys, long[] outputs, Status[] statuses, long factor, long present)
    {
        for (int i = 0; i < keys.Length; i++)
        {
            Assert.Equal(keys[i] < present ? (Status.Ok, keys[i] * factor) : (Status.NotFound, 0L),
                (statuses[i], statuses[i] == Status.Ok ? outputs[i] : 0L));
        }
    }

    [Fact]
    public void Outputs_or_statuses_shorter_than_the_keys_are_refused_naming_which()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        var error = Assert.Throws<ArgumentException>(() => session.Read(new long[3], new long[3], new Status[2]));
        Assert.Equal("statuses", error.ParamName);
        error = Assert.Throws<ArgumentException>(() => session.Read(new long[3], new long[2], new Status[3]));
        Assert.Equal("outputs", error.ParamName);
    }
}
