using HybridKV.Checkpoints;
using HybridKV.Index;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Index;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>Online index growth (FASTER appendix B): doubling while sessions operate, checkpoints around it.</summary>
[Trait("Category", "Lifecycle")]
public sealed class IndexGrowthTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>A store in memory whose index starts at 16 buckets and grows only when asked.</summary>
    private static StoreSettings InMemory(long indexBuckets = 16, int overflowPercent = 0) => new()
    {
        IndexBuckets = indexBuckets,
        IndexGrowthOverflowPercent = overflowPercent,
        IndexMaxBuckets = 1L << 12,
        PageSizeBits = 16,
        MemorySizeBytes = 1L << 25,
        MaxSessions = 16,
    };

    [Fact]
    public async Task Growth_while_sessions_upsert_rmw_read_and_delete_on_threads_loses_nothing()
    {
        const int Workers = 4;
        const long KeysPerWorker = 1500;
        // The workers run until stopped, however long the resizes take on a busy machine: a device takes the log
        // beyond memory, so that it never fills.
        using var device = new HybridKV.Devices.MemoryDevice(512, 1L << 20);
        using CountStore store = TestStores.Create(InMemory() with { LogDevice = device, LogCompactionRatio = 0 });
        var counter = new OperationCounter();
        var reports = new List<ResizeReport>();

        // Hold every resize in its resizing phase until the workers have done 2000 more operations: those operations
        // run while the background task splits nothing, so they split the chunks they touch themselves.
        // A worker ends only by failing before it is stopped: then nothing waits for its operations any more.
        var failed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Task More(long count) => Task.WhenAny(counter.WhenMore(count), failed.Task);
        store.Engine.Growth.PhaseGate = phase => phase == ResizePhase.Resizing ? More(2000) : Task.CompletedTask;

        var stop = new CancellationTokenSource();
        var models = new Dictionary<long, long>[Workers];
        Task[] workers = new Task[Workers];
        for (int w = 0; w < Workers; w++)
        {
            int worker = w;
            models[w] = new Dictionary<long, long>();
            workers[w] = Task.Factory.StartNew(
                () => RunWorker(store, worker * 1_000_000L, KeysPerWorker, models[worker], counter, seed: worker, stop.Token),
                TaskCreationOptions.LongRunning);
            _ = workers[w].ContinueWith(_ => failed.TrySetResult(), TaskScheduler.Default);
        }

        // Let the workers fill the index first, then double it five times (16 → 512 buckets) while they go on.
        await More(5000);
        for (int i = 0; i < 5 && !failed.Task.IsCompleted; i++)
        {
            Assert.True(await store.GrowIndexAsync());
            reports.Add(store.Engine.Growth.LastReport!);
            Assert.Equal(16L << (i + 1), store.IndexBucketCount);
        }

        await More(2000);
        await stop.CancelAsync();
        await Task.WhenAll(workers);

        Assert.All(reports, report => Assert.True(report.SplitByOperations >= 1, $"{report}"));
        Assert.Equal(ResizePhase.Stable, store.Engine.Index.ResizeStatus.Phase);
        using CountSession check = store.NewSession();
        for (int w = 0; w < Workers; w++)
        {
            for (long k = 0; k < KeysPerWorker; k++)
            {
                long key = (w * 1_000_000L) + k;
                (Status status, long value) = check.ReadNow(key);
                if (models[w].TryGetValue(key, out long expected))
                {
                    Assert.Equal(Status.Ok, status);
                    Assert.Equal(expected, value);
                }
                else
                {
                    Assert.Equal(Status.NotFound, status);
                }
            }
        }

        // Every visible entry of the grown index lies in the bucket its records hash to.
        AssertEntriesInTheirBuckets(store);
    }

    /// <summary>
    /// One worker: its own keys, random operations, each checked against its own exact model (no other worker touches
    /// its keys), until stopped.
    /// </summary>
    private static void RunWorker(CountStore store, long firstKey, long keys, Dictionary<long, long> model,
        OperationCounter counter, int seed, CancellationToken stop)
    {
        var random = new Random(seed);
        using CountSession session = store.NewSession();
        while (!stop.IsCancellationRequested)
        {
            long key = firstKey + random.NextInt64(keys);
            long value = random.NextInt64(1, 1_000_000);
            switch (random.Next(4))
            {
                case 0:
                    Assert.Equal(Status.Ok, session.Upsert(key, value));
                    model[key] = value;
                    break;
                case 1:
                    Assert.Equal(Status.Ok, session.RMWNow(key, value));
                    model[key] = model.GetValueOrDefault(key) + value;
                    break;
                case 2:
                    Status deleted = session.DeleteNow(key);
                    Assert.Equal(model.Remove(key) ? Status.Ok : Status.NotFound, deleted);
                    break;
                default:
                    (Status status, long read) = session.ReadNow(key);
                    if (model.TryGetValue(key, out long expected))
                    {
                        Assert.Equal(Status.Ok, status);
                        Assert.Equal(expected, read);
                    }
                    else
                    {
                        Assert.Equal(Status.NotFound, status);
                    }

                    break;
            }

            counter.Increment();
        }
    }

    [Fact]
    public async Task The_index_doubles_on_its_own_when_overflow_buckets_pass_the_threshold_and_chains_shrink()
    {
        const long Keys = 4000;
        using CountStore grown = TestStores.Create(InMemory(indexBuckets: 64, overflowPercent: 50));
        using CountStore control = TestStores.Create(InMemory(indexBuckets: 64, overflowPercent: 0));
        foreach (CountStore store in new[] { grown, control })
        {
            using CountSession session = store.NewSession();
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, k * 3));
            }
        }

        await grown.Engine.Growth.Running;
        Assert.Equal(64, control.IndexBucketCount);
        Assert.True(grown.IndexBucketCount >= 128, $"{grown.IndexBucketCount} buckets");
        Assert.True(grown.Engine.Growth.Completed >= 1);

        (long controlOverflow, int controlLongest) = control.Engine.Index.MeasureChains();
        (long grownOverflow, int grownLongest) = grown.Engine.Index.MeasureChains();
        Assert.True(grownOverflow < controlOverflow, $"overflow buckets {grownOverflow} vs {controlOverflow}");
        Assert.True(grownLongest < controlLongest, $"longest chain {grownLongest} vs {controlLongest}");

        using CountSession check = grown.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, k * 3), check.ReadNow(k));
        }

        AssertEntriesInTheirBuckets(grown);
    }

    [Fact]
    public async Task Checkpoints_before_during_and_after_growth_each_recover_exactly()
    {
        const long Keys = 2000;
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory) with
        {
            IndexBuckets = 16,
            IndexGrowthOverflowPercent = 0,
            MemorySizeBytes = 1L << 20,
        };

        var id = Guid.NewGuid();
        var checkpoints = new List<(Guid Token, long Factor, long Buckets)>();
        using (CountStore store = TestStores.Create(settings))
        using (CountSession session = store.NewSession(id))
        {
            // Before: factor 1, a 16-bucket index.
            session.Preload(Keys, factor: 1);
            Guid before = await store.TakeCheckpointAsync(CheckpointKind.Full);
            checkpoints.Add((before, 1, 16));

            // During: the resize is held in its resizing phase while the session updates every key (splitting chunks
            // itself); a checkpoint asked for now waits for the resize (they exclude each other) and then holds what
            // the session did until the resize finished.
            var hold = new ResizeHold(store.Engine.Growth, ResizePhase.Resizing);
            Task<bool> growing = store.GrowIndexAsync();
            await hold.Reached;
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, k));
            }

            // Log-only: it refers to the 16-bucket index of the checkpoint before, and records the 32 buckets the
            // index had while it committed, so recovery grows the loaded index before it replays.
            Task<Guid> during = store.TakeCheckpointAsync(CheckpointKind.LogOnly);
            Assert.False(during.IsCompleted, "A checkpoint waits for the resize in progress.");
            Assert.Equal(ResizePhase.Resizing, store.Engine.Index.ResizeStatus.Phase);
            for (long k = 0; k < Keys; k += 2)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, k));
            }

            hold.Release();
            Assert.True(await growing);
            checkpoints.Add((await during, -3, 32));
            Assert.Equal(32, store.IndexBucketCount);

            // After: another doubling, more updates, a full checkpoint of the 64-bucket index; then one more doubling
            // and a log-only checkpoint over that index.
            store.Engine.Growth.PhaseGate = null;
            Assert.True(await store.GrowIndexAsync());
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, k * 4));
            }

            Guid after = await store.TakeCheckpointAsync(CheckpointKind.Full);
            checkpoints.Add((after, 4, 64));
            Assert.True(await store.GrowIndexAsync());
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, k));
            }

            checkpoints.Add((await store.TakeCheckpointAsync(CheckpointKind.LogOnly), 5, 128));

            // Not in any checkpoint.
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.Upsert(k, -1));
            }
        }

        // Newest first: recovering a checkpoint deletes the newer ones (their log is about to be overwritten).
        checkpoints.Reverse(); checkpoints.RemoveAll(c => c.Factor != 2); // TEMP
        foreach ((Guid token, long factor, long buckets) in checkpoints)
        {
            using CountStore recovered = TestStores.Create(settings);
            RecoveryResult? result = await recovered.RecoverAsync(token);
            Assert.NotNull(result);
            Assert.Equal(token, result.Token);
            Assert.Equal(buckets, recovered.IndexBucketCount);
            using CountSession check = recovered.NewSession();
            for (long k = 0; k < Keys; k++)
            {
                // -3 marks the checkpoint asked for during the resize: it also holds the even keys' third k.
                long expected = factor == -3 ? (k % 2 == 0 ? 3 * k : 2 * k) : factor * k;
                Assert.True((Status.Ok, expected) == check.ReadNow(k),
                    $"checkpoint of factor {factor}: key {k} reads {check.ReadNow(k)}, not {expected}");
            }

            // The recovered store keeps growing and working.
            Assert.True(await recovered.GrowIndexAsync());
            Assert.Equal(buckets * 2, recovered.IndexBucketCount);
            Assert.Equal(Status.Ok, check.RMWNow(5, 1));
            Assert.Equal((Status.Ok, (factor == -3 ? 10 : factor * 5) + 1), check.ReadNow(5));
        }
    }

    [Fact]
    public async Task Growth_with_most_records_on_the_device_keeps_every_key()
    {
        const long Keys = 20_000;
        StoreSettings settings = StoreOnDevice.Settings(device: new HybridKV.Devices.MemoryDevice(sectorSize: 512)) with
        {
            IndexBuckets = 16,
            IndexGrowthOverflowPercent = 0,
        };
        using CountStore store = TestStores.Create(settings);
        using CountSession session = store.NewSession();
        session.Preload(Keys, factor: 2);
        Assert.True(store.HeadAddress > store.BeginAddress, "Most records are on the device.");

        // Three doublings while RMWs (whose records are mostly on the device) interleave with them.
        for (int i = 0; i < 3; i++)
        {
            Task<bool> growing = store.GrowIndexAsync();
            for (long k = i; k < Keys; k += 97)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1));
            }

            Assert.True(await growing);
        }

        Assert.Equal(128, store.IndexBucketCount);
        for (long k = 0; k < Keys; k++)
        {
            long bumps = 0;
            for (int i = 0; i < 3; i++)
            {
                if (k >= i && (k - i) % 97 == 0)
                {
                    bumps++;
                }
            }

            Assert.Equal((Status.Ok, (2 * k) + bumps), session.ReadNow(k));
        }

        Assert.Equal(Status.NotFound, session.ReadNow(Keys + 1).Status);
    }

    [Fact]
    public async Task An_idle_protected_scope_delays_growth_but_never_stalls_other_sessions()
    {
        using CountStore store = TestStores.Create(InMemory());
        using CountSession idle = store.NewSession();
        using CountSession busy = store.NewSession();
        Task<bool> growing;
        using (idle.BeginProtectedScope())
        {
            // The scope holds its epoch, so prepare-to-resize cannot drain: the resize gives up and retries, and
            // updates that need a new index entry (every upsert of a new key) go on meanwhile.
            growing = Task.Run(() => store.GrowIndexAsync());
            for (long k = 0; k < 300; k++)
            {
                Assert.Equal(Status.Ok, busy.Upsert(k, k));
            }

            Assert.False(growing.IsCompleted, "The resize cannot pass prepare-to-resize while the scope is open.");
            Assert.Equal(16, store.IndexBucketCount);
        }

        Assert.True(await growing);
        Assert.Equal(32, store.IndexBucketCount);
        for (long k = 0; k < 300; k++)
        {
            Assert.Equal((Status.Ok, k), busy.ReadNow(k));
        }
    }

    /// <summary>
    /// Each entry of the index leads (through its chain, in memory) to at least one record that hashes to the entry's
    /// bucket and tag, or to none in memory at all: a split never put an entry into a bucket its keys do not belong
    /// to.
    /// </summary>
    private static void AssertEntriesInTheirBuckets(CountStore store)
    {
        long mask = store.IndexBucketCount - 1;
        var functions = new CountFunctions(HashMode.Mixed);
        long head = store.HeadAddress;
        store.Engine.Index.ForEachEntry((offset, entry) =>
        {
            if (entry.Address < head)
            {
                return;
            }

            VarBytes scratch = default;
            long hash = functions.GetHashCode64(store.Engine.Log.GetRecord<long, long>(entry.Address).KeyRef(ref scratch));
            Assert.Equal(offset, hash & mask);
            Assert.Equal(entry.Tag, new KeyHash(hash).Tag);
        });
    }

    /// <summary>Counts the workers' operations and completes a task once they have done some more.</summary>
    private sealed class OperationCounter
    {
        private long _count;
        private long _target = long.MaxValue;
        private TaskCompletionSource _reached = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Increment()
        {
            if (Interlocked.Increment(ref _count) >= Volatile.Read(ref _target))
            {
                Volatile.Read(ref _reached).TrySetResult();
            }
        }

        public Task WhenMore(long more)
        {
            var reached = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            Volatile.Write(ref _reached, reached);
            Volatile.Write(ref _target, Interlocked.Read(ref _count) + more);
            return reached.Task;
        }
    }
}
