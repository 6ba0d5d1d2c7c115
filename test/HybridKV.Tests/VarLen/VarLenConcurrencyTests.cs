using System.Buffers.Binary;
using System.Text;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.VarLen;

/// <summary>
/// Several sessions on threads at once: appends to shared keys, whose values outgrow their records again and again
/// (in place under the value lock, sealing, copying), must neither lose nor repeat a chunk; an in-place update stalled
/// inside its callback holds back the copy of the record it is changing; and sessions with keys of their own, over a
/// device, must each end with exactly their own model.
/// </summary>
[Trait("Category", "VarLen")]
public sealed class VarLenConcurrencyTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Concurrent_appends_to_shared_keys_lose_and_repeat_nothing(bool onDevice)
    {
        const int Threads = 4;
        const int Keys = 3;
        int appendsPerThread = 300 * TestScale.Factor;
        using var directory = new TempDirectory();
        StoreSettings settings = onDevice ? ByteStores.OnDevice(directory.Path) with { PageSizeBits = 16, MemorySizeBytes = 1L << 18 }
            : ByteStores.InMemory() with { PageSizeBits = 16 };
        using var store = ByteStores.Create(settings);

        Parallel.For(0, Threads, new ParallelOptions { MaxDegreeOfParallelism = Threads }, thread =>
        {
            using var session = store.NewSession();
            var random = new Random(thread);
            Span<byte> chunk = stackalloc byte[4];
            for (int n = 0; n < appendsPerThread; n++)
            {
                // 4-byte chunks: a value alternately fits its record's room and outgrows it.
                BinaryPrimitives.WriteUInt16LittleEndian(chunk, (ushort)thread);
                BinaryPrimitives.WriteUInt16LittleEndian(chunk[2..], (ushort)n);
                session.AppendNow(KeyOf(n % Keys), chunk);
                if (random.Next(8) == 0)
                {
                    session.Upsert($"noise {thread}", ByteStores.Bytes(random.Next(0, 3000), n));
                }
            }
        });

        using var reader = store.NewSession();
        for (int k = 0; k < Keys; k++)
        {
            byte[] value = reader.ReadBytes(KeyOf(k))!;
            Assert.Equal(0, value.Length % 4);
            // Thread t appends n to key n % Keys, in order of n.
            int[] next = Enumerable.Repeat(k, Threads).ToArray();
            for (int offset = 0; offset < value.Length; offset += 4)
            {
                int thread = BinaryPrimitives.ReadUInt16LittleEndian(value.AsSpan(offset));
                int n = BinaryPrimitives.ReadUInt16LittleEndian(value.AsSpan(offset + 2));
                Assert.True(thread < Threads, $"key {k}: a chunk from no thread at offset {offset}");
                Assert.True(n == next[thread], $"key {k}: thread {thread} appended {next[thread]} next, found {n}");
                next[thread] = n + Keys;
            }

            for (int thread = 0; thread < Threads; thread++)
            {
                int expectedCount = (appendsPerThread - k + Keys - 1) / Keys;
                Assert.Equal(k + (expectedCount * Keys), next[thread]);
            }
        }
    }

    [Fact]
    public void Sessions_with_keys_of_their_own_on_a_device_each_end_with_their_model()
    {
        const int Threads = 3;
        int steps = 1500 * TestScale.Factor;
        using var directory = new TempDirectory();
        using var store = ByteStores.Create(ByteStores.OnDevice(directory.Path));
        var models = new Dictionary<string, byte[]>[Threads];

        Parallel.For(0, Threads, new ParallelOptions { MaxDegreeOfParallelism = Threads }, thread =>
        {
            var model = models[thread] = [];
            var random = new Random(100 + thread);
            using var session = store.NewSession();
            for (int step = 0; step < steps; step++)
            {
                string key = $"t{thread}/k{random.Next(20)}";
                byte[] keyBytes = Encoding.UTF8.GetBytes(key);
                switch (random.Next(10))
                {
                    case < 4:
                        byte[] value = ByteStores.Bytes(random.Next(0, 4097), random.Next());
                        session.Upsert(key, value);
                        model[key] = value;
                        break;
                    case < 7:
                        byte[] chunk = ByteStores.Bytes(random.Next(0, 100), random.Next());
                        byte[] old = model.GetValueOrDefault(key) ?? [];
                        if (old.Length + chunk.Length <= 4096)
                        {
                            session.AppendNow(keyBytes, chunk);
                            model[key] = [.. old, .. chunk];
                        }

                        break;
                    case < 9:
                        Assert.Equal(model.GetValueOrDefault(key), session.ReadBytes(keyBytes));
                        break;
                    default:
                        // Blind on the device: it may report a key that held nothing as deleted.
                        bool existed = model.Remove(key);
                        Assert.True(session.DeleteNow(keyBytes) || !existed, "a delete of a live key reported nothing");
                        break;
                }
            }
        });

        Assert.True(store.HeadAddress > store.BeginAddress, "the log should be larger than memory");
        using var reader = store.NewSession();
        for (int thread = 0; thread < Threads; thread++)
        {
            for (int k = 0; k < 20; k++)
            {
                string key = $"t{thread}/k{k}";
                Assert.Equal(models[thread].GetValueOrDefault(key), reader.ReadBytes(Encoding.UTF8.GetBytes(key)));
            }
        }
    }

    [Fact]
    public async Task A_value_that_outgrows_its_record_is_not_copied_while_an_in_place_update_of_it_is_under_way()
    {
        using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, HookedVarBytesFunctions<StallingAppend>>(
            ByteStores.InMemory());
        using var stalled = store.NewSession();
        using var growing = store.NewSession();
        stalled.Upsert("k"u8, "ab"u8);

        // An append of 1 byte fits the record's room (4 bytes); it stops inside InPlaceUpdater until released.
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        StallingAppend.Entered = entered;
        StallingAppend.Release = release;
        var stalledAppend = Task.Run(() => Assert.Equal(Status.Ok, stalled.RMW("k"u8, "S"u8)));
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)));

        // Outgrowing the record seals it and copies it, which must wait for the stalled update, or it would lose it.
        // A correct store cannot finish this append before the release, however long it is given; the delay only
        // gives a store without the lock time to copy too early, which the final value would then show.
        var growingAppend = Task.Run(() => growing.AppendNow("k"u8, "0123456789"u8));
        Task first = await Task.WhenAny(growingAppend, Task.Delay(TimeSpan.FromMilliseconds(300)));
        Assert.NotSame(growingAppend, first);

        release.Set();
        await stalledAppend;
        await growingAppend;
        Assert.Equal("abS0123456789"u8.ToArray(), growing.ReadBytes("k"u8));
    }

    private static byte[] KeyOf(int k) => Encoding.UTF8.GetBytes($"shared/{k}");

    /// <summary>An in-place append of "S" stops until released.</summary>
    private readonly struct StallingAppend : IUpdateHooks
    {
        public static ManualResetEventSlim? Entered { get; set; }

        public static ManualResetEventSlim? Release { get; set; }

        public void BeforeInPlaceUpdate(in VarBytes input)
        {
            if (input.AsReadOnlySpan().SequenceEqual("S"u8) && Entered is { } entered && Release is { } release)
            {
                entered.Set();
                release.Wait();
            }
        }

        public void BeforeCopyUpdate(in VarBytes input)
        {
        }
    }
}
