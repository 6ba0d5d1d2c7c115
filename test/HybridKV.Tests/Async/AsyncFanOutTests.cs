using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Async;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Several asynchronous operations in flight on one session (issue 25): started without awaiting in between, then
/// awaited together, one by one, or blocked on. Every wait has a guard, so that a hang fails the test.
/// </summary>
[Trait("Category", "Async")]
public sealed class AsyncFanOutTests : IDisposable
{
    private static readonly TimeSpan Guard = TimeSpan.FromMinutes(1);
    private const long Keys = 50_000;

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private HybridKVStore<long, long, long, long, CountContext?, CountFunctions> LoadedStore(out CountSession session)
    {
        var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        session = store.NewSession();
        session.Preload(Keys, factor: 3);
        Assert.True(store.HeadAddress > StoreOnDevice.MemoryBytes, "nothing was evicted");
        return store;
    }

    [Theory]
    [InlineData(100)]
    [InlineData(10_000)]
    public async Task Reads_of_keys_on_the_device_started_together_complete_with_their_own_values(int count)
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            long[] keys = Enumerable.Range(0, count).Select(i => (long)i * (Keys / count)).ToArray();
            Task<ReadResult<long>>[] reads = keys.Select(k => session.ReadAsync(k).AsTask()).ToArray();

            ReadResult<long>[] results = await Task.WhenAll(reads).WaitAsync(Guard);

            Assert.Equal(keys.Select(k => new ReadResult<long>(Status.Ok, k * 3)), results);
            Assert.Equal(0, session.PendingCount);
        }
    }

    [Fact]
    public async Task Reads_in_memory_on_the_device_and_absent_started_together_complete_each_with_its_own_result()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            var random = new Random(25);
            long[] keys = Enumerable.Range(0, 5_000).Select(_ => random.NextInt64(Keys + Keys / 10)).ToArray();
            Task<ReadResult<long>>[] reads = keys.Select(k => session.ReadAsync(k).AsTask()).ToArray();
            // Keys of the newest pages are in memory and complete in the call; the others wait for the device.
            Assert.Contains(reads, r => r.IsCompleted);

            ReadResult<long>[] results = await Task.WhenAll(reads).WaitAsync(Guard);

            Assert.Equal(
                keys.Select(k => k < Keys ? new ReadResult<long>(Status.Ok, k * 3) : new ReadResult<long>(Status.NotFound, 0)),
                results);
        }
    }

    [Fact]
    public async Task Reads_of_a_store_in_memory_started_together_complete()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        for (long k = 0; k < 1_000; k++)
        {
            session.Upsert(k, k + 1);
        }

        ReadResult<long>[] results = await Task.WhenAll(
            Enumerable.Range(0, 1_000).Select(k => session.ReadAsync(k).AsTask())).WaitAsync(Guard);

        Assert.Equal(Enumerable.Range(0, 1_000).Select(k => new ReadResult<long>(Status.Ok, k + 1L)), results);
    }

    [Fact]
    public async Task RMWs_of_cold_keys_started_together_each_count_once()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            // Ten RMWs on each of 500 keys spread over the log, in one burst.
            var updates = new List<Task<Status>>();
            for (int round = 0; round < 10; round++)
            {
                for (long k = 0; k < Keys; k += 100)
                {
                    updates.Add(session.RMWAsync(k, 1).AsTask());
                }
            }

            Assert.All(await Task.WhenAll(updates).WaitAsync(Guard), status => Assert.Equal(Status.Ok, status));
            for (long k = 0; k < Keys; k += 100)
            {
                Assert.Equal(new ReadResult<long>(Status.Ok, k * 3 + 10), await session.ReadAsync(k).AsTask().WaitAsync(Guard));
            }
        }
    }

    [Fact]
    public async Task Upserts_and_deletes_of_cold_keys_started_together_take_effect_in_the_order_they_were_issued()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            // Every key is on the device: a delete reads it first, and the upsert issued after it must still win.
            var writes = new List<Task<Status>>();
            for (long k = 0; k < 2_000; k++)
            {
                long key = k * 20;
                if (k % 3 == 0)
                {
                    writes.Add(session.UpsertAsync(key, -key).AsTask());
                    writes.Add(session.DeleteAsync(key).AsTask());
                }
                else
                {
                    writes.Add(session.DeleteAsync(key).AsTask());
                    writes.Add(session.UpsertAsync(key, key * 7).AsTask());
                }
            }

            Assert.All(await Task.WhenAll(writes).WaitAsync(Guard), status => Assert.Equal(Status.Ok, status));
            Task<ReadResult<long>>[] reads = Enumerable.Range(0, 2_000).Select(k => session.ReadAsync(k * 20L).AsTask()).ToArray();
            ReadResult<long>[] results = await Task.WhenAll(reads).WaitAsync(Guard);
            for (long k = 0; k < 2_000; k++)
            {
                Assert.Equal(k % 3 == 0 ? new ReadResult<long>(Status.NotFound, 0) : new ReadResult<long>(Status.Ok, k * 20 * 7),
                    results[k]);
            }
        }
    }

    [Fact]
    public async Task Operations_in_flight_can_be_blocked_on_from_a_thread_pool_thread()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            ReadResult<long>[] results = await Task.Run(() =>
            {
                Task<ReadResult<long>>[] reads = Enumerable.Range(0, 2_000).Select(k => session.ReadAsync(k * 25L).AsTask()).ToArray();
                Assert.True(Task.WaitAll(reads, Guard), "the reads did not complete");
                return reads.Select(r => r.Result).ToArray();
            }).WaitAsync(Guard);

            Assert.Equal(Enumerable.Range(0, 2_000).Select(k => new ReadResult<long>(Status.Ok, k * 75L)), results);
        }
    }

    [Fact]
    public void Operations_in_flight_complete_under_a_single_threaded_synchronization_context()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            ReadResult<long>[] results = SingleThreadContext.Run(async () =>
            {
                int thread = Environment.CurrentManagedThreadId;
                Task<ReadResult<long>>[] reads = Enumerable.Range(0, 300).Select(k => session.ReadAsync(k * 111L).AsTask()).ToArray();
                Task<Status>[] updates = Enumerable.Range(0, 100).Select(k => session.RMWAsync(k * 333L + 1, 1).AsTask()).ToArray();
                ReadResult<long>[] done = await Task.WhenAll(reads);
                await Task.WhenAll(updates);
                Assert.Equal(thread, Environment.CurrentManagedThreadId);
                return done;
            }, Guard);

            Assert.Equal(Enumerable.Range(0, 300).Select(k => new ReadResult<long>(Status.Ok, k * 333L)), results);
        }
    }

    [Fact]
    public async Task Cancelling_operations_in_flight_leaves_the_session_usable()
    {
        using var held = new HeldReads();
        CountSession session = held.Session;
        using var cancellation = new CancellationTokenSource();
        Task<ReadResult<long>>[] reads = Enumerable.Range(0, 50).Select(k => session.ReadAsync(k, cancellationToken: cancellation.Token).AsTask()).ToArray();
        Task<Status>[] updates = Enumerable.Range(0, 50).Select(k => session.RMWAsync(k, 1000, cancellationToken: cancellation.Token).AsTask()).ToArray();

        cancellation.Cancel();
        foreach (Task task in reads.Cast<Task>().Concat(updates))
        {
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => task.WaitAsync(Guard));
        }

        // The operations themselves still finish, in order, once the device answers.
        held.Release();
        Assert.True(await Task.Run(() => session.CompletePending(wait: true)).WaitAsync(Guard));
        Assert.Equal(0, session.PendingCount);
        for (long k = 0; k < 50; k++)
        {
            Assert.Equal(new ReadResult<long>(Status.Ok, k + 1000), await session.ReadAsync(k).AsTask().WaitAsync(Guard));
        }

        Assert.Equal(Status.Ok, await session.UpsertAsync(1, 1).AsTask().WaitAsync(Guard));
    }

    [Fact]
    public async Task Blocking_operations_and_CompletePending_work_while_asynchronous_ones_are_in_flight()
    {
        using var held = new HeldReads();
        CountSession session = held.Session;
        Task<ReadResult<long>>[] reads = Enumerable.Range(0, 100).Select(k => session.ReadAsync(k).AsTask()).ToArray();

        var context = new CountContext();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(5_000, 0, ref output, context));
        Assert.Equal(Status.Ok, session.Upsert(30_000, 9));
        Assert.Equal(9, session.ReadValue(30_000, out Status fresh));
        Assert.Equal(Status.Ok, fresh);
        Assert.False(session.CompletePending());

        held.Release();
        Assert.True(await Task.Run(() => session.CompletePending(wait: true)).WaitAsync(Guard));
        Assert.Equal(1, context.Completions);
        Assert.Equal(5_000, context.Output);
        Assert.Equal(Enumerable.Range(0, 100).Select(k => new ReadResult<long>(Status.Ok, k)),
            await Task.WhenAll(reads).WaitAsync(Guard));
    }

    [Fact]
    public async Task A_protected_scope_is_refused_while_asynchronous_operations_are_in_flight()
    {
        using var held = new HeldReads();
        CountSession session = held.Session;
        Task<ReadResult<long>> read = session.ReadAsync(1).AsTask();

        var refused = Assert.Throws<InvalidOperationException>(() => session.BeginProtectedScope());
        Assert.Contains("in flight", refused.Message, StringComparison.Ordinal);

        held.Release();
        Assert.Equal(new ReadResult<long>(Status.Ok, 1), await read.WaitAsync(Guard));
        using (session.BeginProtectedScope())
        {
            Assert.Equal(Status.Ok, session.Upsert(2, 22));
            Assert.Equal(22, session.ReadValue(2, out Status status));
            Assert.Equal(Status.Ok, status);
        }
    }

    [Fact]
    public async Task Awaited_reads_from_the_device_leave_the_driver_parked_with_no_timed_wait()
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            // One read in flight at a time, then bursts: the driver finishes each read when it lands and otherwise holds
            // no thread and no timer, so nothing ever waits for the periodic recheck.
            for (long k = 0; k < 200; k++)
            {
                Assert.Equal(new ReadResult<long>(Status.Ok, k * 250 * 3), await session.ReadAsync(k * 250).AsTask().WaitAsync(Guard));
            }

            for (int round = 0; round < 5; round++)
            {
                Task<ReadResult<long>>[] reads = Enumerable.Range(0, 64).Select(i => session.ReadAsync(round * 9_000L + i * 131).AsTask()).ToArray();
                ReadResult<long>[] results = await Task.WhenAll(reads).WaitAsync(Guard);
                Assert.Equal(Enumerable.Range(0, 64).Select(i => new ReadResult<long>(Status.Ok, (round * 9_000L + i * 131) * 3)), results);
            }

            Assert.Equal(0, session.TimedWaits);
        }
    }

    [Fact]
    public async Task An_awaited_read_behind_a_blocking_read_of_its_key_completes_without_CompletePending()
    {
        using var held = new HeldReads();
        CountSession session = held.Session;
        var context = new CountContext();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(7, 0, ref output, context));
        Task<ReadResult<long>> read = session.ReadAsync(7).AsTask();
        Task<Status> update = session.RMWAsync(7, 10).AsTask();
        Assert.False(read.IsCompleted);

        // Only the blocking read reaches the device; its landing must wake the parked driver, which finishes it (its
        // report waits for the caller) and then the two awaited operations behind it.
        held.Release();
        Assert.Equal(new ReadResult<long>(Status.Ok, 7), await read.WaitAsync(Guard));
        Assert.Equal(Status.Ok, await update.WaitAsync(Guard));
        Assert.Equal(0, context.Completions);
        Assert.True(session.CompletePending(wait: true));
        Assert.Equal(1, context.Completions);
        Assert.Equal(7, context.Output);
        Assert.Equal(new ReadResult<long>(Status.Ok, 17), await session.ReadAsync(7).AsTask().WaitAsync(Guard));
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public async Task Awaited_and_blocking_operations_mixed_on_hot_keys_match_a_model(int seed)
    {
        using var store = LoadedStore(out CountSession session);
        using (session)
        {
            // Keys repeat, so operations queue behind each other on their key, awaited and blocking ones mixed; the caller
            // sometimes drives a pass itself (CompletePending without waiting), which may finish awaited operations and
            // release others behind them.
            var random = new Random(seed);
            var model = new Dictionary<long, long>();
            var updates = new List<Task<Status>>();
            var reads = new List<(long Key, long Expected, Task<ReadResult<long>> Read)>();
            long[] hot = Enumerable.Range(0, 40).Select(_ => random.NextInt64(Keys)).Distinct().ToArray();
            long Current(long key) => model.TryGetValue(key, out long v) ? v : key * 3;
            for (int i = 0; i < 3_000; i++)
            {
                long key = hot[random.Next(hot.Length)];
                switch (random.Next(6))
                {
                    case 0:
                        reads.Add((key, Current(key), session.ReadAsync(key).AsTask()));
                        break;
                    case 1:
                    case 2:
                        updates.Add(session.RMWAsync(key, 1).AsTask());
                        model[key] = Current(key) + 1;
                        break;
                    case 3:
                        Status status = session.RMW(key, 2);
                        Assert.True(status is Status.Ok or Status.Pending, $"RMW gave {status}");
                        model[key] = Current(key) + 2;
                        break;
                    case 4:
                        session.CompletePending();
                        break;
                    default:
                        // An upsert issued after pending operations on its key still takes effect after them.
                        updates.Add(session.UpsertAsync(key, -key).AsTask());
                        model[key] = -key;
                        break;
                }
            }

            Assert.All(await Task.WhenAll(updates).WaitAsync(Guard), status => Assert.Equal(Status.Ok, status));
            foreach ((long key, long expected, Task<ReadResult<long>> read) in reads)
            {
                Assert.Equal(new ReadResult<long>(Status.Ok, expected), await read.WaitAsync(Guard));
            }

            Assert.True(await Task.Run(() => session.CompletePending(wait: true)).WaitAsync(Guard));
            foreach (long key in hot)
            {
                Assert.Equal(new ReadResult<long>(Status.Ok, Current(key)), await session.ReadAsync(key).AsTask().WaitAsync(Guard));
            }
        }
    }

    /// <summary>A store of 20,000 keys, most on a device that answers no read until released.</summary>
    private sealed class HeldReads : IDisposable
    {
        private readonly TaskCompletionSource _release = new();
        private readonly FaultInjectingDevice _device = new(new MemoryDevice(512, 1L << 16));
        private readonly HybridKVStore<long, long, long, long, CountContext?, CountFunctions> _store;

        public HeldReads()
        {
            _store = StoreOnDevice.Create(StoreOnDevice.Settings(device: _device));
            Session = _store.NewSession();
            Session.Preload(20_000);
            _device.HoldReads = _release.Task;
        }

        public CountSession Session { get; }

        public void Release()
        {
            _release.SetResult();
            _device.HoldReads = null;
        }

        public void Dispose()
        {
            Session.Dispose();
            _store.Dispose();
            _device.Dispose();
        }
    }
}
