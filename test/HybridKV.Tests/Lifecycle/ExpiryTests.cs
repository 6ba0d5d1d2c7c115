using FsCheck;
using FsCheck.Fluent;
using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using HybridKV.Tests.VarLen;
using Session = HybridKV.Sessions.Session<long, long, long, long, HybridKV.Tests.Support.CountContext?, HybridKV.Tests.Support.CountFunctions>;
using Store = HybridKV.HybridKVStore<long, long, long, long, HybridKV.Tests.Support.CountContext?, HybridKV.Tests.Support.CountFunctions>;

namespace HybridKV.Tests.Lifecycle;

/// <summary>
/// Values that expire (issue 18): an expired value reads as not found wherever its record is (mutable, read-only,
/// device, recovered), an update starts afresh from it, compaction drops it, and its expiry is covered by the record's
/// checksum. Time is a <see cref="ManualClock"/> the tests move.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class ExpiryTests : IDisposable
{
    private readonly TempDirectory _directory = new();
    private readonly ManualClock _clock = new();

    public void Dispose() => _directory.Dispose();

    private StoreSettings Settings(string? directory = null) =>
        StoreOnDevice.Settings(directory ?? _directory.NewSubdirectory()) with { TimeProvider = _clock };

    private static Expiration Ms(long milliseconds) => Expiration.After(TimeSpan.FromMilliseconds(milliseconds));

    [Fact]
    public void A_value_reads_until_its_expiry_and_as_not_found_from_then_on_in_memory_and_on_the_device()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(1, 10, Ms(100)));
        Assert.Equal(Status.Ok, session.Upsert(2, 20, Ms(300)));
        Assert.Equal(Status.Ok, session.Upsert(3, 30));

        _clock.Advance(99);
        Assert.Equal((Status.Ok, 10L), session.ReadNow(1));
        _clock.Advance(1);
        Assert.Equal(Status.NotFound, session.ReadNow(1).Status);
        Assert.Equal((Status.Ok, 20L), session.ReadNow(2));

        // Pushed out to the device: the expiry word travels with the record.
        session.Preload(5_000, first: 1_000);
        Assert.True(store.HeadAddress > StoreOnDevice.MemoryBytes, "the first records left memory");
        Assert.Equal(Status.NotFound, session.ReadNow(1).Status);
        Assert.Equal((Status.Ok, 20L), session.ReadNow(2));
        Assert.Equal((Status.Ok, 30L), session.ReadNow(3));
        _clock.Advance(200);
        Assert.Equal(Status.NotFound, session.ReadNow(2).Status);
        Assert.Equal((Status.Ok, 30L), session.ReadNow(3));
    }

    [Fact]
    public void An_update_without_an_expiration_keeps_the_expiry_and_one_of_an_expired_value_starts_afresh()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(7, 100, Ms(50)));
        long tail = store.TailAddress;
        Assert.Equal(Status.Ok, session.RMWNow(7, 5));
        Assert.Equal(tail, store.TailAddress); // in place: the expiry stays as it was
        Assert.Equal((Status.Ok, 105L), session.ReadNow(7));

        _clock.Advance(50);
        Assert.Equal(Status.NotFound, session.ReadNow(7).Status);
        // The RMW of an expired value calls the initial updater: 5, not 110; and the new value has no expiry.
        Assert.Equal(Status.Ok, session.RMWNow(7, 5));
        Assert.Equal((Status.Ok, 5L), session.ReadNow(7));
        _clock.Advance(1_000_000);
        Assert.Equal((Status.Ok, 5L), session.ReadNow(7));
    }

    [Fact]
    public void An_update_with_an_expiration_replaces_the_expiry_and_never_removes_it()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(1, 1, Ms(10)));
        Assert.Equal(Status.Ok, session.RMW(1, 1, Ms(100)));
        Assert.Equal(Status.Ok, session.Upsert(2, 2, Ms(10)));
        Assert.Equal(Status.Ok, session.RMW(2, 1, Expiration.Never));
        Assert.Equal(Status.Ok, session.Upsert(3, 3, Ms(10)));
        Assert.Equal(Status.Ok, session.Upsert(3, 30));
        Assert.Equal(Status.Ok, session.Upsert(4, 4));
        Assert.Equal(Status.Ok, session.Upsert(4, 40, Ms(10)));

        _clock.Advance(10);
        Assert.Equal((Status.Ok, 2L), session.ReadNow(1));
        Assert.Equal((Status.Ok, 3L), session.ReadNow(2));
        Assert.Equal((Status.Ok, 30L), session.ReadNow(3));
        Assert.Equal(Status.NotFound, session.ReadNow(4).Status);
        _clock.Advance(90);
        Assert.Equal(Status.NotFound, session.ReadNow(1).Status);
        Assert.Equal((Status.Ok, 3L), session.ReadNow(2));
    }

    [Fact]
    public async Task Compaction_drops_expired_values_and_their_index_entries_and_keeps_the_expiry_of_those_it_copies()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        const int Keys = 2_000;
        for (long k = 0; k < Keys; k++)
        {
            // Even keys live 1 s, odd keys 1 min.
            session.Upsert(k, k, Ms(k % 2 == 0 ? 1_000 : 60_000));
        }

        session.Preload(3_000, first: 10_000);
        _clock.Advance(1_000);

        CompactionResult result = await store.CompactAsync(store.HeadAddress);
        Assert.True(result.TombstonesDropped >= Keys / 2, $"{result.TombstonesDropped} dropped");
        var expiries = new Dictionary<long, DateTimeOffset?>();
        await foreach (ScanRecord<long, long> record in store.ScanAsync(0, long.MaxValue))
        {
            if (record.Key < Keys)
            {
                expiries[record.Key] = record.ExpiresAt;
            }
        }

        // No record of an expired key is left anywhere in the log; each live one kept its expiry.
        Assert.Equal(Enumerable.Range(0, Keys / 2).Select(i => 2L * i + 1), expiries.Keys.Order());
        DateTimeOffset expected = DateTimeOffset.FromUnixTimeMilliseconds(_clock.Milliseconds - 1_000 + 60_000);
        Assert.All(expiries.Values, e => Assert.Equal(expected, e));
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal(k % 2 == 0 ? (Status.NotFound, 0L) : (Status.Ok, k), session.ReadOrZeroNow(k));
        }

        _clock.Advance(59_000);
        Assert.Equal(Status.NotFound, session.ReadNow(1).Status);
    }

    [Fact]
    public async Task A_live_scan_hides_expired_values_and_a_range_scan_reports_each_expiry()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        session.Upsert(1, 1, Ms(10));
        session.Upsert(2, 2, Expiration.At(DateTimeOffset.FromUnixTimeMilliseconds(_clock.Milliseconds + 20)));
        session.Upsert(3, 3);
        _clock.Advance(15);

        var live = new List<long>();
        await foreach (ScanRecord<long, long> record in store.ScanLiveAsync())
        {
            live.Add(record.Key);
        }

        Assert.Equal([2L, 3L], live.Order());
        var all = new Dictionary<long, DateTimeOffset?>();
        foreach (ScanRecord<long, long> record in store.Scan(0, long.MaxValue))
        {
            all[record.Key] = record.ExpiresAt;
        }

        Assert.Equal(DateTimeOffset.FromUnixTimeMilliseconds(_clock.Milliseconds + 5), all[2]);
        Assert.Null(all[3]);
        Assert.NotNull(all[1]);
    }

    [Fact]
    public async Task Expiring_values_of_byte_sequences_survive_a_checkpoint_and_recovery_and_expire_after_it()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = ByteStores.OnDevice(directory) with { TimeProvider = _clock };
        using (var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(settings))
        using (var session = store.NewSession())
        {
            session.Upsert("short", "a"u8, Ms(100));
            session.Upsert("long", ByteStores.Bytes(300, 1), Ms(10_000));
            session.Upsert("forever", ByteStores.Bytes(50, 2));
            for (int i = 0; i < 400; i++)
            {
                session.Upsert($"filler:{i}", ByteStores.Bytes(200, i));
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full);
        }

        _clock.Advance(100);
        using (var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(settings))
        {
            Assert.NotNull(await store.RecoverAsync());
            using var session = store.NewSession();
            Assert.Null(ByteStores.ReadBytes(session, "short"u8));
            Assert.Equal(ByteStores.Bytes(300, 1), ByteStores.ReadBytes(session, "long"u8));
            Assert.Equal(ByteStores.Bytes(50, 2), ByteStores.ReadBytes(session, "forever"u8));
            _clock.Advance(9_900);
            Assert.Null(ByteStores.ReadBytes(session, "long"u8));
            Assert.Equal(ByteStores.Bytes(50, 2), ByteStores.ReadBytes(session, "forever"u8));
        }
    }

    [Fact]
    public async Task A_damaged_expiry_word_on_the_device_is_an_error_not_another_expiry()
    {
        string directory = _directory.NewSubdirectory();
        long address;
        using (Store store = StoreOnDevice.Create(Settings(directory) with { MemoryCompactionMaxLiveFraction = 0 }))
        using (Session session = store.NewSession())
        {
            session.Upsert(5, 50, Ms(60_000));
            session.Preload(5_000, first: 1_000);
            address = store.Scan(0, long.MaxValue).First(r => r.Key == 5).Address;
            Assert.True(address < store.HeadAddress);
            await store.TakeCheckpointAsync(CheckpointKind.Full);
        }

        // The expiry word follows the 32 bytes of a long/long record; its top byte turns an expiry into another.
        long segmentBytes = 1L << StoreOnDevice.Settings().LogSegmentSizeBits;
        string segment = Path.Combine(directory, "log", $"hlog.{address / segmentBytes}");
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            file.Position = (address % segmentBytes) + 32 + 5;
            int b = file.ReadByte();
            file.Position -= 1;
            file.WriteByte((byte)(b ^ 0x10));
        }

        using Store recovered = StoreOnDevice.Create(Settings(directory));
        Assert.NotNull(await recovered.RecoverAsync());
        using Session reader = recovered.NewSession();
        await Assert.ThrowsAsync<CorruptLogException>(async () => await reader.ReadAsync(5));
    }

    [Fact]
    public async Task A_scan_from_inside_a_record_starts_at_the_next_one_where_records_of_both_sizes_share_pages()
    {
        using Store store = StoreOnDevice.Create(Settings());
        using Session session = store.NewSession();
        for (long k = 0; k < 6_000; k++)
        {
            // Expiring records are a word longer: no fixed stride finds record starts any more.
            _ = k % 3 == 0 ? session.Upsert(k, k, Ms(3_600_000)) : session.Upsert(k, k);
        }

        long[] addresses = [.. store.Scan(0, long.MaxValue).Select(r => r.Address)];
        Assert.True(store.HeadAddress > addresses[addresses.Length / 2], "half the records are on the device");
        foreach (int i in new[] { 1, 100, addresses.Length / 3, addresses.Length - 50 })
        {
            long inside = addresses[i] + 8;
            var found = new List<long>();
            await foreach (ScanRecord<long, long> record in store.ScanAsync(inside, addresses[i + 20]))
            {
                found.Add(record.Address);
            }

            Assert.Equal(addresses[(i + 1)..(i + 20)], found);
        }
    }

    [Fact]
    public void A_time_to_live_must_be_positive()
    {
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => Expiration.After(TimeSpan.Zero));
        Assert.Equal("timeToLive", error.ParamName);
        Assert.Throws<ArgumentOutOfRangeException>(() => Expiration.After(TimeSpan.FromSeconds(-1)));
    }

    /// <summary>
    /// Random upserts and RMWs with and without expirations, deletes, reads, the clock moving and compactions, on a
    /// log many times memory, against a dictionary model that knows each value's expiry.
    /// </summary>
    [Fact]
    public void Random_operations_with_expirations_compaction_and_a_moving_clock_match_a_model()
    {
        const int KeySpace = 40;
        Gen<(int Kind, long Key, long Value)> operation =
            from kind in Gen.Frequency(
                (3, Gen.Constant(0)), (3, Gen.Constant(1)), (3, Gen.Constant(2)), (3, Gen.Constant(3)),
                (1, Gen.Constant(4)), (4, Gen.Constant(5)), (1, Gen.Constant(6)), (3, Gen.Constant(7)),
                (2, Gen.Constant(8)), (1, Gen.Constant(9)))
            from k in Gen.Choose(0, KeySpace - 1)
            from value in Gen.Choose(1, 60)
            select (kind, (long)k, (long)value);

        Property property = Prop.ForAll<(int Kind, long Key, long Value)[]>(
            Arb.From(Gen.Choose(50, 300).SelectMany(length => Gen.ArrayOf(operation, length))),
            operations =>
            {
                using Store store = StoreOnDevice.Create(Settings());
                using Session session = store.NewSession();
                var model = new Dictionary<long, (long Value, long? ExpiresAt)>();
                bool Live(long k, out long value)
                {
                    value = 0;
                    if (!model.TryGetValue(k, out (long Value, long? ExpiresAt) entry) ||
                        entry.ExpiresAt <= _clock.Milliseconds)
                    {
                        return false;
                    }

                    value = entry.Value;
                    return true;
                }

                foreach ((int kind, long k, long v) in operations)
                {
                    long now = _clock.Milliseconds;
                    bool live = Live(k, out long old);
                    switch (kind)
                    {
                        case 0:
                            Assert.Equal(Status.Ok, session.Upsert(k, v));
                            model[k] = (v, null);
                            break;
                        case 1:
                            Assert.Equal(Status.Ok, session.Upsert(k, v, Ms(v)));
                            model[k] = (v, now + v);
                            break;
                        case 2:
                            Assert.Equal(Status.Ok, session.RMWNow(k, v));
                            model[k] = live ? (old + v, model[k].ExpiresAt) : (v, null);
                            break;
                        case 3:
                            Assert.Equal(Status.Ok, session.RMWNow(k, v, Ms(v)));
                            model[k] = (live ? old + v : v, now + v);
                            break;
                        case 4:
                            Assert.Equal(Status.Ok, session.RMWNow(k, v, Expiration.Never));
                            model[k] = (live ? old + v : v, null);
                            break;
                        case 5:
                            Assert.Equal(live ? (Status.Ok, old) : (Status.NotFound, 0L), session.ReadOrZeroNow(k));
                            break;
                        case 6:
                            Status deleted = session.DeleteNow(k);
                            Assert.True(live ? deleted == Status.Ok : deleted is Status.Ok or Status.NotFound, $"{deleted}");
                            model.Remove(k);
                            break;
                        case 7:
                            _clock.Advance(v / 3);
                            break;
                        case 8:
                            // Half of memory's worth of other keys: the model's keys move to read-only and the device.
                            session.Preload(1_000, first: 100_000 + (k * 1_000));
                            break;
                        default:
                            if (store.HeadAddress > store.BeginAddress)
                            {
                                store.CompactAsync(store.HeadAddress).GetAwaiter().GetResult();
                            }

                            break;
                    }
                }

                for (long k = 0; k < KeySpace; k++)
                {
                    Assert.Equal(Live(k, out long value) ? (Status.Ok, value) : (Status.NotFound, 0L),
                        session.ReadOrZeroNow(k));
                }

                return true;
            });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(8 * TestScale.Factor), property);
    }
}
