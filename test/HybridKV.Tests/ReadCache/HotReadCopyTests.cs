using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using HybridKV.Tests.VarLen;

namespace HybridKV.Tests.ReadCache;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Hot records read from the device come back into memory (<see cref="StoreSettings.CopyHotReadsToTail"/>): a key read
/// from the device a second time is copied to the tail and read from memory after that; a key read once is not; and a
/// copy never hides an update, delete or RMW that came while its read waited for the device, in one session or many,
/// across checkpoints, recovery and expiry.
/// </summary>
[Trait("Category", "ReadCache")]
public sealed class HotReadCopyTests : IDisposable
{
    private const long Keys = 20_000;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>No memory compaction: it would keep some records in memory that the tests expect on the device.</summary>
    private static StoreSettings Settings(string? directory = null, StorageDevice? device = null) =>
        StoreOnDevice.Settings(directory, device) with { MemoryCompactionMaxLiveFraction = 0 };

    private static long DeviceReads(CountStore store) => store.Engine.Log.Device!.BytesRead;

    [Fact]
    public void A_key_read_twice_from_the_device_is_copied_to_the_tail_and_read_from_memory_after_that()
    {
        using var store = StoreOnDevice.Create(Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(Keys, factor: 10);

        long tail = store.TailAddress;
        long read = DeviceReads(store);
        Assert.Equal((Status.Ok, 70), session.ReadNow(7));
        Assert.True(DeviceReads(store) > read, "the first read went to the device");
        Assert.Equal((tail, 0L), (store.TailAddress, store.Engine.HotReadsCopied));

        read = DeviceReads(store);
        Assert.Equal((Status.Ok, 70), session.ReadNow(7));
        Assert.True(DeviceReads(store) > read, "the second read went to the device");
        Assert.Equal(1, store.Engine.HotReadsCopied);
        Assert.True(store.TailAddress > tail, "the copy was appended");

        // From memory now: answered at once, nothing read.
        read = DeviceReads(store);
        long output = 0;
        Assert.Equal(Status.Ok, session.Read(7, 0, ref output, new CountContext()));
        Assert.Equal(70, output);
        Assert.Equal(read, DeviceReads(store));
        Assert.Equal(1, store.Engine.HotReadsCopied);
    }

    /// <summary>
    /// Keys read once each are not copied, but for the filter's false positives (another key's read set the same bit):
    /// a few in a hundred here, where every key were copied if reads were not filtered.
    /// </summary>
    [Fact]
    public void Keys_read_once_each_are_not_copied_but_for_the_filters_false_positives()
    {
        const long Reads = 1_000;
        using var store = StoreOnDevice.Create(Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(Keys, factor: 10);
        long tail = store.TailAddress;

        for (long k = 0; k < Reads; k++)
        {
            Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
        }

        long copies = store.Engine.HotReadsCopied;
        Assert.True(copies <= Reads / 50, $"{copies} of {Reads} keys read once were copied");
        Assert.Equal(tail + (copies * HybridKV.Log.LogRecord<long, long>.FixedSize), store.TailAddress);
    }

    [Fact]
    public void With_the_setting_off_or_a_read_cache_the_log_gets_no_copies()
    {
        foreach (StoreSettings settings in new[]
                 {
                     Settings(_directory.NewSubdirectory()) with { CopyHotReadsToTail = false },
                     Settings(_directory.NewSubdirectory()) with { ReadCacheBytes = 1L << 20 },
                 })
        {
            using var store = StoreOnDevice.Create(settings);
            using var session = store.NewSession();
            session.Preload(Keys, factor: 10);
            long tail = store.TailAddress;
            for (int i = 0; i < 3; i++)
            {
                Assert.Equal((Status.Ok, 70), session.ReadNow(7));
            }

            Assert.Equal((tail, 0L), (store.TailAddress, store.Engine.HotReadsCopied));
        }
    }

    public enum Change
    {
        Upsert,
        Delete,
        RMW,
    }

    /// <summary>
    /// The second read of a hot key waits for the device while another session changes the key: the read returns
    /// the value it decided on, and its copy, which would hold that older value, is not linked.
    /// </summary>
    [Theory]
    [InlineData(Change.Upsert)]
    [InlineData(Change.Delete)]
    [InlineData(Change.RMW)]
    public void A_change_made_while_the_second_read_waited_for_the_device_is_never_hidden_by_its_copy(Change change)
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using var store = StoreOnDevice.Create(Settings(device: device));
        using var reader = store.NewSession();
        using var writer = store.NewSession();
        reader.Preload(Keys, factor: 10);
        Assert.Equal((Status.Ok, 50), reader.ReadNow(5));

        var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        device.HoldReads = held.Task;
        var read = new CountContext();
        try
        {
            long output = 0;
            Assert.Equal(Status.Pending, reader.Read(5, 0, ref output, read));
            device.HoldReads = null;
            switch (change)
            {
                case Change.Upsert:
                    Assert.Equal(Status.Ok, writer.Upsert(5, 500));
                    break;
                case Change.Delete:
                    Assert.Equal(Status.Ok, writer.Delete(5));
                    break;
                default:
                    // An RMW reads the record itself first (its own device read, not held).
                    Assert.Equal(Status.Ok, writer.RMWNow(5, 450));
                    break;
            }
        }
        finally
        {
            device.HoldReads = null;
            held.SetResult();
            reader.CompletePending(wait: true);
        }

        Assert.Equal((Status.Ok, 50L), (read.LastStatus, read.Output));
        Assert.Equal(0, store.Engine.HotReadsCopied);
        (Status, long) expected = change == Change.Delete ? (Status.NotFound, 0) : (Status.Ok, 500);
        Assert.Equal(expected, Normalized(reader.ReadNow(5)));
        Assert.Equal(expected, Normalized(writer.ReadNow(5)));
    }

    private static (Status, long) Normalized((Status Status, long Value) read) =>
        read.Status == Status.NotFound ? (Status.NotFound, 0) : read;

    [Fact]
    public void A_copied_value_keeps_its_expiry()
    {
        var clock = new ManualClock();
        using var store = StoreOnDevice.Create(Settings(_directory.NewSubdirectory()) with { TimeProvider = clock });
        using var session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(-5, 50, Expiration.After(TimeSpan.FromSeconds(10))));
        session.Preload(Keys, factor: 10);
        Assert.Equal((Status.Ok, 50), session.ReadNow(-5));
        Assert.Equal((Status.Ok, 50), session.ReadNow(-5));
        Assert.Equal(1, store.Engine.HotReadsCopied);

        clock.Advance(10_001);
        Assert.Equal(Status.NotFound, session.ReadNow(-5).Status);
    }

    [Fact]
    public async Task Copies_are_checkpointed_and_recovered_like_any_record_and_hide_nothing_written_after_them()
    {
        string directory = _directory.NewSubdirectory();
        using (var store = StoreOnDevice.Create(Settings(directory)))
        {
            using var session = store.NewSession();
            session.Preload(Keys, factor: 10);
            for (int pass = 0; pass < 2; pass++)
            {
                for (long k = 0; k < 50; k++)
                {
                    Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
                }
            }

            Assert.True(store.Engine.HotReadsCopied >= 50, $"{store.Engine.HotReadsCopied} copies");
            // Every other copied key updated after its copy, before the checkpoint.
            for (long k = 0; k < 50; k += 2)
            {
                session.Upsert(k, -k);
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            // Not checkpointed: lost with the process.
            for (long k = 0; k < 50; k++)
            {
                session.Upsert(k, 1_000_000);
            }
        }

        using var recovered = StoreOnDevice.Create(Settings(directory));
        Assert.NotNull(await recovered.RecoverAsync());
        using var reader = recovered.NewSession();
        for (long k = 0; k < 100; k++)
        {
            long expected = k < 50 && k % 2 == 0 ? -k : k * 10;
            Assert.Equal((Status.Ok, expected), reader.ReadNow(k));
        }
    }

    /// <summary>
    /// Readers read hot keys again and again, each read completed before the next, while a writer raises their values
    /// and deletes some: a value a reader sees never goes back, and at the end every key reads as the writer left it.
    /// A copy linked over a newer record would show an older value.
    /// </summary>
    [Fact]
    public async Task Readers_of_hot_keys_never_see_a_value_go_back_while_a_writer_changes_them()
    {
        const int HotKeys = 64;
        using var store = StoreOnDevice.Create(Settings(_directory.NewSubdirectory()));
        using (var loader = store.NewSession())
        {
            loader.Preload(Keys, factor: 0);
        }

        int rounds = 3_000 * TestScale.Factor;
        using var stop = new CancellationTokenSource();
        long[] finalValues = new long[HotKeys];
        var writer = Task.Run(() =>
        {
            using var session = store.NewSession();
            var random = new Random(11);
            try
            {
                for (int round = 1; round <= rounds; round++)
                {
                    long key = random.Next(HotKeys);
                    // Values only rise (a delete reads as 0 and the next upsert is higher): a reader sees them rise.
                    if (round % 17 == 0)
                    {
                        Assert.True(session.DeleteNow(key) is Status.Ok or Status.NotFound);
                        finalValues[key] = 0;
                    }
                    else
                    {
                        Assert.Equal(Status.Ok, session.Upsert(key, round));
                        finalValues[key] = round;
                    }

                    // Filler pushes the hot keys' records out of memory again and again.
                    for (int i = 0; i < 8; i++)
                    {
                        long filler = HotKeys + random.Next((int)Keys - HotKeys);
                        session.Upsert(filler, 0);
                    }
                }
            }
            finally
            {
                stop.Cancel();
            }
        });

        var readers = Enumerable.Range(0, 2).Select(r => Task.Run(() =>
        {
            using var session = store.NewSession();
            var random = new Random(r);
            long[] seen = new long[HotKeys];
            long reads = 0;
            while (!stop.IsCancellationRequested || reads < 1_000)
            {
                long key = random.Next(HotKeys);
                (Status status, long value) = session.ReadNow(key);
                long now = status == Status.NotFound ? 0 : value;
                Assert.True(status is Status.Ok or Status.NotFound, $"read of {key}: {status}");
                // A delete takes a key back to 0 legitimately; anything else lower than seen is a resurrected value.
                Assert.True(now >= seen[key] || now == 0, $"key {key} read {now} after {seen[key]}");
                seen[key] = now;
                reads++;
            }
        })).ToArray();

        await Task.WhenAll([writer, .. readers]);
        Assert.True(store.Engine.HotReadsCopied > 0, "the hot keys were copied");
        using var check = store.NewSession();
        for (long k = 0; k < HotKeys; k++)
        {
            Assert.Equal(finalValues[k], check.ReadNow(k) is (Status.Ok, long v) ? v : 0);
        }
    }

    [Fact]
    public void Variable_length_records_read_twice_are_copied_whole()
    {
        using var store = ByteStores.Create(ByteStores.OnDevice(_directory.NewSubdirectory()) with
        {
            MemoryCompactionMaxLiveFraction = 0,
            LogCompactionRatio = 0,
        });
        using var session = store.NewSession();
        byte[] key = [1, 2, 3];
        byte[] value = ByteStores.Bytes(3_000, seed: 4);
        Assert.Equal(Status.Ok, session.Upsert(key, value));
        for (int i = 0; i < 64; i++)
        {
            Assert.Equal(Status.Ok, session.Upsert(ByteStores.Bytes(8, seed: 100 + i), ByteStores.Bytes(2_000, seed: i)));
        }

        Assert.Equal(value, session.ReadBytes(key));
        Assert.Equal(value, session.ReadBytes(key));
        Assert.Equal(1, store.Engine.HotReadsCopied);
        long read = store.Engine.Log.Device!.BytesRead;
        Assert.Equal(value, session.ReadBytes(key));
        Assert.Equal(read, store.Engine.Log.Device.BytesRead);
    }
}
