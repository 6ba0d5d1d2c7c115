using HybridKV.Caching;
using HybridKV.Checkpoints;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using HybridKV.Tests.VarLen;

namespace HybridKV.Tests.ReadCache;

/// <summary>
/// The read cache (issue 19, FASTER appendix D): a record read from the device once is read from memory after that,
/// and what a read returns is always the key's newest value, whatever updates, deletes, compactions, expiry and
/// recovery did to it, from one thread or many.
/// </summary>
[Trait("Category", "ReadCache")]
public sealed class ReadCacheTests : IDisposable
{
    private const long Keys = 2_000;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>No memory compaction: it would keep some of the records the tests push onto the device in memory, when
    /// it happens to get to their pages first.</summary>
    private StoreSettings Cached(string? directory = null, long cacheBytes = 1L << 20) =>
        StoreOnDevice.Settings(directory ?? _directory.NewSubdirectory()) with
        {
            ReadCacheBytes = cacheBytes,
            MemoryCompactionMaxLiveFraction = 0,
        };

    /// <summary>Writes <see cref="Keys"/> keys with value key * 10, then enough other keys that they all leave memory.</summary>
    private static void LoadOntoDevice(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store,
        Session<long, long, long, long, CountContext?, CountFunctions> session)
    {
        session.Preload(Keys, factor: 10);
        PushOntoDevice(store, session);
    }

    private static long _filler = 1_000_000_000;

    /// <summary>Writes keys no test reads until everything written before is below the head.</summary>
    private static void PushOntoDevice(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store,
        Session<long, long, long, long, CountContext?, CountFunctions> session)
    {
        long until = store.TailAddress;
        while (store.HeadAddress < until)
        {
            long key = Interlocked.Increment(ref _filler);
            session.Upsert(key, key);
        }
    }

    private static long DeviceBytesRead(HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store) =>
        store.Engine.Log.Device!.BytesRead;

    [Fact]
    public void A_record_read_from_the_device_is_read_from_the_cache_the_next_time()
    {
        using var store = StoreOnDevice.Create(Cached());
        using var session = store.NewSession();
        LoadOntoDevice(store, session);

        long output = 0;
        Assert.Equal(Status.Pending, session.Read(7, 0, ref output, new CountContext()));
        Assert.True(session.CompletePending(wait: true));
        long readBefore = DeviceBytesRead(store);
        long hitsBefore = store.Engine.ReadCache!.Hits;

        // Answered at once, with no device read.
        Assert.Equal(Status.Ok, session.Read(7, 0, ref output, new CountContext()));
        Assert.Equal(70, output);
        Assert.Equal(readBefore, DeviceBytesRead(store));
        Assert.Equal(hitsBefore + 1, store.Engine.ReadCache.Hits);

        // Batched reads look there too.
        long[] keys = [7, 7];
        var outputs = new long[2];
        var statuses = new Status[2];
        session.Read(keys, outputs, statuses);
        Assert.Equal([Status.Ok, Status.Ok], statuses);
        Assert.Equal([70L, 70L], outputs);
        Assert.Equal(readBefore, DeviceBytesRead(store));
    }

    [Fact]
    public void An_RMW_of_a_cached_record_builds_on_it_without_reading_the_device()
    {
        using var store = StoreOnDevice.Create(Cached());
        using var session = store.NewSession();
        LoadOntoDevice(store, session);
        Assert.Equal((Status.Ok, 90), session.ReadNow(9));
        long readBefore = DeviceBytesRead(store);

        Assert.Equal(Status.Ok, session.RMWNow(9, 5));

        Assert.Equal(readBefore, DeviceBytesRead(store));
        Assert.Equal((Status.Ok, 95), session.ReadNow(9));
    }

    [Fact]
    public void Without_a_cache_every_read_of_a_record_on_the_device_reads_the_device()
    {
        using var store = StoreOnDevice.Create(Cached(cacheBytes: 0));
        using var session = store.NewSession();
        LoadOntoDevice(store, session);
        Assert.Null(store.Engine.ReadCache);

        Assert.Equal((Status.Ok, 70), session.ReadNow(7));
        long readBefore = DeviceBytesRead(store);
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(7, 0, ref output, new CountContext()));
        Assert.True(session.CompletePending(wait: true));
        Assert.True(DeviceBytesRead(store) > readBefore);
    }

    [Fact]
    public void Upserts_deletes_and_RMWs_after_caching_are_what_reads_return_in_memory_and_on_the_device()
    {
        using var store = StoreOnDevice.Create(Cached());
        using var session = store.NewSession();
        LoadOntoDevice(store, session);
        for (long k = 0; k < 30; k++)
        {
            Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
            Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
        }

        Assert.True(store.Engine.ReadCache!.Hits >= 30, $"{store.Engine.ReadCache.Hits} hits");
        for (long k = 0; k < 10; k++)
        {
            session.Upsert(k, -k);
        }

        for (long k = 10; k < 20; k++)
        {
            Assert.Equal(Status.Ok, session.DeleteNow(k));
        }

        for (long k = 20; k < 30; k++)
        {
            Assert.Equal(Status.Ok, session.RMWNow(k, 5));
        }

        void AssertNewest()
        {
            for (long k = 0; k < 30; k++)
            {
                (Status, long) expected = k < 10 ? (Status.Ok, -k) : k < 20 ? (Status.NotFound, 0) : (Status.Ok, (k * 10) + 5);
                Assert.Equal(expected, session.ReadOrZeroNow(k));
            }
        }

        AssertNewest();
        PushOntoDevice(store, session);
        AssertNewest();
        AssertNewest();
    }

    [Fact]
    public async Task Concurrent_readers_and_writers_of_cached_keys_see_whole_values_never_older_than_they_saw()
    {
        // A cache of a few sets, so that slots are replaced all the time under the readers.
        using var store = StoreOnDevice.Create(Cached(cacheBytes: 64 * 1024));
        using (var session = store.NewSession())
        {
            LoadOntoDevice(store, session);
        }

        const long HotKeys = 200;
        int rounds = 40 * TestScale.Factor;
        using var stop = new CancellationTokenSource();
        Task Writer(int which) => Task.Run(() =>
        {
            using var session = store.NewSession();
            for (long round = 1; round <= rounds; round++)
            {
                for (long k = which; k < HotKeys; k += 2)
                {
                    // The key in the high half, a round that only grows in the low half: a torn or mixed value shows.
                    session.Upsert(k, (k << 32) | round);
                }

                PushOntoDevice(store, session);
            }
        });

        Task Reader() => Task.Run(() =>
        {
            using var session = store.NewSession();
            var seen = new long[HotKeys];
            while (!stop.IsCancellationRequested)
            {
                for (long k = 0; k < HotKeys; k++)
                {
                    (Status status, long value) = session.ReadNow(k);
                    Assert.Equal(Status.Ok, status);
                    if (value == k * 10)
                    {
                        Assert.Equal(0, seen[k]);
                        continue;
                    }

                    Assert.Equal(k, value >> 32);
                    Assert.True((value & uint.MaxValue) >= seen[k], $"key {k}: round {value & uint.MaxValue} after {seen[k]}");
                    seen[k] = value & uint.MaxValue;
                }
            }
        });

        Task[] readers = [Reader(), Reader()];
        await Task.WhenAll(Writer(0), Writer(1));
        stop.Cancel();
        await Task.WhenAll(readers);
        Assert.True(store.Engine.ReadCache!.Hits > 0, "no read was answered from the cache");

        using var check = store.NewSession();
        for (long k = 0; k < HotKeys; k++)
        {
            Assert.Equal((Status.Ok, (k << 32) | (uint)rounds), check.ReadNow(k));
        }
    }

    [Fact]
    public void Second_chance_keeps_a_record_read_again_while_others_pass_through_its_set()
    {
        // One set: every address competes for the same slots.
        int recordBytes = 32;
        using var cache = new Caching.ReadCache(HybridKV.Caching.ReadCache.Ways * (8 + recordBytes), recordBytes);
        Assert.Equal(1, cache.Sets);
        byte[] record = new byte[recordBytes];
        byte[] copy = new byte[recordBytes];
        void Add(long address)
        {
            BitConverter.TryWriteBytes(record, address);
            cache.Add(address, record);
        }

        bool Holds(long address)
        {
            if (!cache.TryCopy(address, copy))
            {
                return false;
            }

            Assert.Equal(address, BitConverter.ToInt64(copy));
            return true;
        }

        const long Hot = 64;
        Add(Hot);
        long cold = 1_000;
        for (int i = 1; i < HybridKV.Caching.ReadCache.Ways; i++)
        {
            Add(cold += 64);
        }

        // Read again before the hand comes round (a set's worth of newcomers, less one), it stays; left alone, it goes
        // within two rounds.
        for (int round = 0; round < 4; round++)
        {
            Assert.True(Holds(Hot), $"round {round}: the record read again was replaced");
            for (int i = 1; i < HybridKV.Caching.ReadCache.Ways; i++)
            {
                Add(cold += 64);
            }
        }

        for (int i = 0; i < 2 * HybridKV.Caching.ReadCache.Ways; i++)
        {
            Add(cold += 64);
        }

        Assert.False(Holds(Hot), "a record nobody read again was kept");
        Assert.True(Holds(cold), "the newest record is cached");
    }

    [Fact]
    public async Task A_copy_taken_while_its_slot_is_replaced_is_refused_not_returned_torn()
    {
        // One set of long records that a writer replaces without pause while readers copy them out: every copy
        // returned must be one record, all of its bytes those of the address asked for.
        const int RecordBytes = 1024;
        using var cache = new Caching.ReadCache(HybridKV.Caching.ReadCache.Ways * (8 + RecordBytes), RecordBytes);
        long[] addresses = Enumerable.Range(1, 3 * HybridKV.Caching.ReadCache.Ways).Select(i => i * 64L).ToArray();
        long copies = 100_000L * TestScale.Factor;
        long returned = 0;
        using var done = new CancellationTokenSource();
        var writing = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Task writer = Task.Run(() =>
        {
            var record = new byte[RecordBytes];
            for (long i = 0; !done.IsCancellationRequested; i++)
            {
                long address = addresses[i % addresses.Length];
                Array.Fill(record, (byte)(address / 64));
                cache.Add(address, record);
                if (i == addresses.Length)
                {
                    writing.SetResult();
                }
            }
        });

        Task Reader(int seed) => Task.Run(() =>
        {
            var copy = new byte[RecordBytes];
            var random = new Random(seed);
            for (long i = 0; i < copies; i++)
            {
                long address = addresses[random.Next(addresses.Length)];
                if (cache.TryCopy(address, copy))
                {
                    Interlocked.Increment(ref returned);
                    int torn = Array.FindIndex(copy, b => b != (byte)(address / 64));
                    Assert.True(torn < 0, $"the copy of {address} holds byte {copy[Math.Max(torn, 0)]} at {torn}");
                }
            }
        });

        try
        {
            await writing.Task;
            await Task.WhenAll(Reader(1), Reader(2));
        }
        finally
        {
            done.Cancel();
            await writer;
        }

        Assert.True(returned > 0, "no copy was returned");
    }

    [Fact]
    public async Task After_a_compaction_reads_through_the_cache_return_the_moved_records()
    {
        using var store = StoreOnDevice.Create(Cached());
        using var session = store.NewSession();
        LoadOntoDevice(store, session);
        for (long k = 0; k < Keys; k += 3)
        {
            Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
        }

        for (long k = 1; k < Keys; k += 3)
        {
            session.Upsert(k, k * 100);
        }

        PushOntoDevice(store, session);
        long begin = store.BeginAddress;
        CompactionResult result = await store.CompactAsync(store.HeadAddress);
        Assert.True(store.BeginAddress > begin && result.RecordsCopied > 0, "the compaction moved records");

        for (int pass = 0; pass < 2; pass++)
        {
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal((Status.Ok, k % 3 == 1 ? k * 100 : k * 10), session.ReadNow(k));
            }
        }
    }

    [Fact]
    public void A_cached_value_that_expires_reads_as_not_found()
    {
        var clock = new ManualClock();
        using var store = StoreOnDevice.Create(Cached() with { TimeProvider = clock });
        using var session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(5, 50, Expiration.After(TimeSpan.FromSeconds(10))));
        PushOntoDevice(store, session);
        Assert.Equal((Status.Ok, 50), session.ReadNow(5));
        long hits = store.Engine.ReadCache!.Hits;
        Assert.Equal((Status.Ok, 50), session.ReadNow(5));
        Assert.Equal(hits + 1, store.Engine.ReadCache.Hits);

        clock.Advance(10_001);
        Assert.Equal(Status.NotFound, session.ReadNow(5).Status);
    }

    [Fact]
    public async Task A_recovered_store_reads_its_checkpointed_values_through_its_cache()
    {
        string directory = _directory.NewSubdirectory();
        using (var store = StoreOnDevice.Create(Cached(directory)))
        {
            using var session = store.NewSession();
            LoadOntoDevice(store, session);
            for (long k = 0; k < 50; k++)
            {
                Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            // Not checkpointed: lost with the process.
            for (long k = 0; k < 50; k++)
            {
                session.Upsert(k, -1);
            }
        }

        using var recovered = StoreOnDevice.Create(Cached(directory));
        Assert.NotNull(await recovered.RecoverAsync());
        using var reader = recovered.NewSession();
        for (int pass = 0; pass < 2; pass++)
        {
            for (long k = 0; k < 50; k++)
            {
                Assert.Equal((Status.Ok, k * 10), reader.ReadNow(k));
            }
        }

        Assert.True(recovered.Engine.ReadCache!.Hits > 0, "the second pass was answered from the cache");
    }

    [Fact]
    public void Settings_outside_the_range_or_a_store_of_variable_length_records_are_refused_naming_the_setting()
    {
        var negative = Assert.Throws<ArgumentOutOfRangeException>(() =>
            StoreOnDevice.Create(Cached(cacheBytes: -1)));
        Assert.Equal(nameof(StoreSettings.ReadCacheBytes), negative.ParamName);

        var variable = Assert.Throws<ArgumentException>(() =>
            ByteStores.Create(ByteStores.OnDevice(_directory.NewSubdirectory()) with { ReadCacheBytes = 1L << 20 }));
        Assert.Contains(nameof(StoreSettings.ReadCacheBytes), variable.Message, StringComparison.Ordinal);
        Assert.Contains("variable length", variable.Message, StringComparison.Ordinal);
    }
}
