using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.LargerThanMemory;

[Trait("Category", "LargerThanMemory")]
public sealed class AsyncOperationTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Async_operations_await_the_device_and_match_a_model()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        const long Keys = 20_000;
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal(Status.Ok, await session.UpsertAsync(k, k));
        }

        Assert.True(store.HeadAddress > StoreOnDevice.MemoryBytes, "nothing was evicted");
        var random = new Random(3);
        var model = Enumerable.Range(0, (int)Keys).ToDictionary(k => (long)k, k => (long)k);
        for (int i = 0; i < 2_000; i++)
        {
            long key = random.NextInt64(Keys + 50);
            switch (random.Next(4))
            {
                case 0:
                    ReadResult<long> read = await session.ReadAsync(key);
                    Assert.Equal(model.TryGetValue(key, out long v) ? new ReadResult<long>(Status.Ok, v)
                        : new ReadResult<long>(Status.NotFound, 0), read);
                    break;
                case 1:
                    Assert.Equal(Status.Ok, await session.RMWAsync(key, 5));
                    model[key] = model.GetValueOrDefault(key) + 5;
                    break;
                case 2:
                    Assert.Equal(model.Remove(key) ? Status.Ok : Status.NotFound, await session.DeleteAsync(key));
                    break;
                default:
                    Assert.Equal(Status.Ok, await session.UpsertAsync(key, -key));
                    model[key] = -key;
                    break;
            }
        }

        Assert.Equal(0, session.PendingCount);
    }

    [Fact]
    public async Task Awaited_reads_from_the_device_reuse_finished_operations_with_their_buffers()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload();
        const int InFlight = 64;
        for (int round = 0; round < 3; round++)
        {
            // Evicted keys, a different set each round, all in flight at once on the one session.
            var reads = new Task<ReadResult<long>>[InFlight];
            for (int i = 0; i < InFlight; i++)
            {
                reads[i] = session.ReadAsync((round * InFlight) + i).AsTask();
            }

            for (int i = 0; i < InFlight; i++)
            {
                Assert.Equal(new ReadResult<long>(Status.Ok, (round * InFlight) + i), await reads[i]);
            }

            Assert.Equal(0, session.PendingCount);

            // Every finished operation was kept (none was freed), and no round allocated more than were in flight at
            // once: the later rounds took the kept ones again (a read that lands while the caller still issues the
            // round's others is taken again within the round, so the first round may have needed fewer).
            Assert.InRange(session.SpareCount, 1, InFlight);
        }
    }

    [Fact]
    public async Task CompletePendingAsync_finishes_operations_started_with_the_blocking_methods()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload();

        var contexts = new List<CountContext>();
        for (long k = 0; k < 100; k++)
        {
            var context = new CountContext();
            contexts.Add(context);
            long output = 0;
            Assert.Equal(Status.Pending, session.Read(k, 0, ref output, context));
        }

        await session.CompletePendingAsync();
        Assert.Equal(0, session.PendingCount);
        for (int k = 0; k < contexts.Count; k++)
        {
            Assert.Equal(1, contexts[k].Completions);
            Assert.Equal(Status.Ok, contexts[k].LastStatus);
            Assert.Equal(k, contexts[k].Output);
        }
    }

    [Fact]
    public async Task An_async_read_that_fails_on_the_device_throws_the_device_error()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            session.Preload();

            device.FailRead = _ => true;
            await Assert.ThrowsAsync<StorageDeviceException>(async () => await session.ReadAsync(1));
            await Assert.ThrowsAsync<StorageDeviceException>(async () => await session.RMWAsync(2, 1));
            Assert.Equal(0, session.PendingCount);
        }
    }

    [Fact]
    public async Task An_awaited_RMW_whose_continuation_cannot_get_log_space_fails_instead_of_hanging()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            session.Preload();

            // Flushing fails from now on: once the frames fill up, nothing can get a new record.
            device.FailWrite = _ => true;
            Assert.Throws<StorageDeviceException>(() =>
            {
                for (long k = 20_000; k < 200_000; k++)
                {
                    session.Upsert(k, k);
                }
            });

            // Key 1 is on the device: the read works, the copy to the tail cannot.
            await Assert.ThrowsAsync<StorageDeviceException>(
                async () => await session.RMWAsync(1, 1).AsTask().WaitAsync(TimeSpan.FromMinutes(1)));
            Assert.Equal(0, session.PendingCount);
        }
    }

    [Fact]
    public async Task An_async_upsert_yields_while_the_log_waits_for_a_slow_device()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { Latency = TimeSpan.FromMilliseconds(100) };
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device)))
        using (var session = store.NewSession())
        {
            bool yielded = false;
            for (long k = 0; k < 8_000; k++)
            {
                ValueTask<Status> upsert = session.UpsertAsync(k, k);
                yielded |= !upsert.IsCompleted;
                Assert.Equal(Status.Ok, await upsert);
            }

            Assert.True(yielded, "no upsert had to wait for the device");
            device.Latency = TimeSpan.Zero;
            Assert.Equal(new ReadResult<long>(Status.Ok, 3), await session.ReadAsync(3));
        }
    }
}
