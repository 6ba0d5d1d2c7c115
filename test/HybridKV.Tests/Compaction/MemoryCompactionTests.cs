using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Log;
using HybridKV.Operations;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Xunit.Abstractions;

namespace HybridKV.Tests.Compaction;

/// <summary>
/// Keeping live records in memory (issue 26): the live records of a read-only page are copied to the tail before the
/// page leaves memory, a superseded or deleted record never comes back, and copies made during a commit recover as the
/// values they copy. Most tests drive one page by hand (the background compactor is off), so that what is copied does
/// not depend on when a background task ran.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class MemoryCompactionTests(ITestOutputHelper output)
{
    // The records that fill the first 4 KiB page, which starts at the first valid address.
    private static readonly int Keys = (int)((StoreOnDevice.PageSize - LogAddress.FirstValid) / LogRecord<long, long>.FixedSize);
    private const long FirstFiller = 1_000_000;

    private static StoreSettings Settings(StorageDevice device, CheckpointStore checkpoints, double maxLiveFraction = 0) =>
        StoreOnDevice.Settings(device: device) with
        {
            CheckpointStore = checkpoints,
            MemoryCompactionMaxLiveFraction = maxLiveFraction,
        };

    private static long PageSize => StoreOnDevice.PageSize;

    /// <summary>Upserts fresh keys until <paramref name="done"/> holds (each upsert moves the tail).</summary>
    private static long Fill(Session<long, long, long, long, CountContext?, CountFunctions> session, long next, Func<bool> done)
    {
        while (!done())
        {
            Assert.Equal(Status.Ok, session.Upsert(next, next));
            next++;
        }

        return next;
    }

    /// <summary>Keys 0 to <see cref="Keys"/> - 1 with value k fill the first page, which then becomes read-only for every thread.</summary>
    private static long LoadFirstPage(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store,
        Session<long, long, long, long, CountContext?, CountFunctions> session)
    {
        for (long k = 0; k < Keys; k++)
        {
            session.Upsert(k, k);
        }

        Assert.Equal(PageSize, store.TailAddress);
        return Fill(session, FirstFiller, () => store.Engine.Log.SafeReadOnlyAddress >= PageSize);
    }

    private static PageCompaction CompactFirstPage(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, long maxLiveBytes) =>
        store.Engine.CompactPage(0, maxLiveBytes, store.Engine.CompactionEntry);

    [Fact]
    public void The_live_records_of_a_read_only_page_are_copied_forward_and_are_read_from_memory_after_it_left()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 20));
        using var checkpoints = new MemoryCheckpointStore();
        using var store = StoreOnDevice.Create(Settings(device, checkpoints));
        using var session = store.NewSession();
        long filler = LoadFirstPage(store, session);
        for (long k = 0; k < Keys / 2; k++)
        {
            session.Upsert(k, k + 1000); // read-only: a new record at the tail, the one on page 0 is stale
        }

        PageCompaction result = CompactFirstPage(store, PageSize);

        Assert.Equal(PageCompactionOutcome.Copied, result.Outcome);
        Assert.Equal(Keys / 2, result.CopiedRecords);
        Assert.Equal(Keys / 2 * LogRecord<long, long>.FixedSize, result.LiveBytes);
        Fill(session, filler, () => store.HeadAddress > PageSize);
        long readsBefore = device.ReadCount;
        for (long k = 0; k < Keys; k++)
        {
            long output = 0;
            Assert.Equal(Status.Ok, session.Read(k, ref output));
            Assert.Equal(k < Keys / 2 ? k + 1000 : k, output);
        }

        Assert.Equal(readsBefore, device.ReadCount);
    }

    [Fact]
    public void Without_copying_the_keys_of_a_page_that_left_memory_are_read_from_the_device()
    {
        // The control of the test above: the same keys go to the device when nothing copies them.
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 20));
        using var checkpoints = new MemoryCheckpointStore();
        using var store = StoreOnDevice.Create(Settings(device, checkpoints));
        using var session = store.NewSession();
        long filler = LoadFirstPage(store, session);
        Fill(session, filler, () => store.HeadAddress > PageSize);

        long output = 0;
        Assert.Equal(Status.Pending, session.Read(Keys - 1, ref output));
        Assert.Equal((Status.Ok, Keys - 1), session.ReadNow(Keys - 1));
    }

    [Fact]
    public void A_page_whose_live_records_fill_more_than_allowed_is_left_as_it_is()
    {
        using var device = new MemoryDevice(512, 1L << 20);
        using var checkpoints = new MemoryCheckpointStore();
        using var store = StoreOnDevice.Create(Settings(device, checkpoints));
        using var session = store.NewSession();
        LoadFirstPage(store, session);
        long tail = store.TailAddress;

        PageCompaction result = CompactFirstPage(store, (Keys * LogRecord<long, long>.FixedSize) - 1);

        Assert.Equal(PageCompactionOutcome.MostlyLive, result.Outcome);
        Assert.Equal(0, result.CopiedRecords);
        Assert.Equal(tail, store.TailAddress);
    }

    [Fact]
    public async Task A_key_deleted_after_its_record_became_read_only_is_not_brought_back_before_or_after_recovery()
    {
        using var device = new MemoryDevice(512, 1L << 20);
        using var checkpoints = new MemoryCheckpointStore();
        using (var store = StoreOnDevice.Create(Settings(device, checkpoints)))
        using (var session = store.NewSession())
        {
            long filler = LoadFirstPage(store, session);
            for (long k = 0; k < 10; k++)
            {
                Assert.Equal(Status.Ok, session.Delete(k));
            }

            PageCompaction result = CompactFirstPage(store, PageSize);

            Assert.Equal(Keys - 10, result.CopiedRecords);
            Fill(session, filler, () => store.HeadAddress > PageSize);
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(k < 10 ? (Status.NotFound, 0L) : (Status.Ok, k), session.ReadNow(k));
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full);
        }

        using var recovered = StoreOnDevice.Create(Settings(device, checkpoints));
        await recovered.RecoverAsync();
        using var reader = recovered.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal(k < 10 ? (Status.NotFound, 0L) : (Status.Ok, k), reader.ReadNow(k));
        }
    }

    [Fact]
    public void A_page_that_left_memory_is_reported_and_nothing_is_copied()
    {
        using var device = new MemoryDevice(512, 1L << 20);
        using var checkpoints = new MemoryCheckpointStore();
        using var store = StoreOnDevice.Create(Settings(device, checkpoints));
        using var session = store.NewSession();
        long filler = LoadFirstPage(store, session);
        Fill(session, filler, () => store.HeadAddress > PageSize);
        long tail = store.TailAddress;

        PageCompaction result = CompactFirstPage(store, PageSize);

        Assert.Equal(PageCompactionOutcome.Evicted, result.Outcome);
        Assert.Equal(tail, store.TailAddress);
    }

    [Theory]
    [InlineData(CheckpointMode.FoldOver)]
    [InlineData(CheckpointMode.Snapshot)]
    public async Task Copies_made_while_a_commit_waits_for_its_flush_recover_as_the_values_they_copy(CheckpointMode mode)
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 20));
        using var memory = new MemoryCheckpointStore();
        using var checkpoints = new GatedCheckpointStore(memory);
        using (var store = StoreOnDevice.Create(Settings(device, checkpoints)))
        using (var session = store.NewSession())
        {
            LoadFirstPage(store, session);
            // Held in WAIT-FLUSH: a fold-over while the log is written, a snapshot while it is copied.
            var release = new TaskCompletionSource();
            device.HoldWrites = release.Task;
            checkpoints.HoldSnapshotWrites = release.Task;
            Task<Guid> checkpoint = store.TakeCheckpointAsync(CheckpointKind.Full, mode);
            await WaitUntilAsync(() => store.Engine.State.Phase == CprPhase.WaitFlush, checkpoint);

            PageCompaction result = CompactFirstPage(store, PageSize);
            release.SetResult();
            await checkpoint;

            Assert.Equal(Keys, result.CopiedRecords);
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal((Status.Ok, k), session.ReadNow(k));
            }
        }

        // The copies lie at or above the commit's final address (or are of the next version): recovery finds the
        // records they copied.
        using var recovered = StoreOnDevice.Create(Settings(device, checkpoints));
        await recovered.RecoverAsync();
        using var reader = recovered.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, k), reader.ReadNow(k));
        }
    }

    [Fact]
    public async Task Sessions_updating_while_the_background_compacts_and_checkpoints_commit_lose_nothing_and_revive_nothing()
    {
        const int Threads = 2;
        const int KeysPerThread = 300;
        int operations = 150_000 * TestScale.Factor;
        using var device = new MemoryDevice(512, 1L << 24);
        using var checkpoints = new MemoryCheckpointStore();
        var models = new Dictionary<long, long>[Threads];
        using (var store = StoreOnDevice.Create(Settings(device, checkpoints, StoreSettings.MaxMemoryCompactionMaxLiveFraction)))
        {
            using var stop = new CancellationTokenSource();
            Task checkpointing = Task.Run(async () =>
            {
                for (int n = 0; !stop.IsCancellationRequested; n++)
                {
                    await store.TakeCheckpointAsync(
                        n % 4 == 0 ? CheckpointKind.Full : CheckpointKind.LogOnly,
                        n % 2 == 0 ? CheckpointMode.FoldOver : CheckpointMode.Snapshot);
                }
            });

            Task[] workers = [.. Enumerable.Range(0, Threads).Select(t => Task.Factory.StartNew(() =>
            {
                var model = models[t] = new Dictionary<long, long>();
                var random = new Random(26 + t);
                using var session = store.NewSession();
                for (int i = 0; i < operations; i++)
                {
                    long key = (t * KeysPerThread) + random.Next(KeysPerThread);
                    switch (random.Next(10))
                    {
                        case < 4:
                            Assert.Equal(Status.Ok, session.RMWNow(key, 3));
                            model[key] = model.GetValueOrDefault(key) + 3;
                            break;
                        case < 7:
                            session.Upsert(key, i);
                            session.CompletePending(wait: true);
                            model[key] = i;
                            break;
                        case < 8:
                            session.DeleteNow(key);
                            model.Remove(key);
                            break;
                        default:
                            (Status status, long value) = session.ReadNow(key);
                            Assert.Equal(model.TryGetValue(key, out long expected) ? (Status.Ok, expected) : (Status.NotFound, 0L),
                                (status, value));
                            break;
                    }
                }
            }, TaskCreationOptions.LongRunning))];

            await Task.WhenAll(workers);
            stop.Cancel();
            await checkpointing;
            await store.TakeCheckpointAsync(CheckpointKind.Full);
            using var reader = store.NewSession();
            VerifyAll(reader, models, KeysPerThread);
            HybridKV.Compaction.MemoryCompactor compactor = Assert.IsType<HybridKV.Compaction.MemoryCompactor>(store.MemoryCompactor);
            output.WriteLine($"{compactor.PagesExamined} pages examined, {compactor.RecordsCopied} records copied, " +
                $"{compactor.PagesMostlyLive} mostly live, {compactor.PagesMissed} missed; tail {store.TailAddress}");
        }

        using var recovered = StoreOnDevice.Create(Settings(device, checkpoints));
        await recovered.RecoverAsync();
        using var after = recovered.NewSession();
        VerifyAll(after, models, KeysPerThread);
    }

    private static void VerifyAll(
        Session<long, long, long, long, CountContext?, CountFunctions> session, Dictionary<long, long>[] models, int keysPerThread)
    {
        for (int t = 0; t < models.Length; t++)
        {
            for (long key = t * keysPerThread; key < (t + 1) * keysPerThread; key++)
            {
                Assert.Equal(models[t].TryGetValue(key, out long expected) ? (Status.Ok, expected) : (Status.NotFound, 0L),
                    session.ReadNow(key));
            }
        }
    }

    /// <summary>Waits for a state a background task reaches, failing if the task ends first or it takes a minute.</summary>
    private static async Task WaitUntilAsync(Func<bool> reached, Task background)
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(1));
        while (!reached())
        {
            Assert.False(background.IsCompleted, "The background task ended before the state was reached.");
            await Task.Delay(1, timeout.Token);
        }
    }
}
