using System.Collections.Concurrent;
using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Compaction;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// A compaction keeps the keys of the device pages its check pass read (<see cref="HybridKV.Compaction.DevicePageKeys{TKey, TValue}"/>):
/// the compactions after it answer their checks of those pages from the keys, without reading the pages again, and
/// never take another key's record for a newer record of theirs.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class DevicePageKeysTests
{
    // 128 records of 32 bytes a page of 4 KiB: 16 pages a region, the store's memory.
    private const int RegionKeys = 2048;
    private const long Twin = 1_000_000;
    private const int PageSize = 1 << 12;

    [Fact]
    public async Task A_compaction_answers_checks_from_the_keys_of_pages_an_earlier_one_read()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 24));
        var reads = new ConcurrentQueue<DeviceRequest>();
        device.FailRead = request =>
        {
            reads.Enqueue(request);
            return false;
        };
        using var store = new CountStore(
            Settings(device), new CountFunctions());
        using var session = store.NewSession();
        Regions regions = Write(session, store, newerFor: key => key);

        reads.Clear();
        await store.CompactAsync(regions.BStart);
        // Region C's pages, each with many of the checks of A's keys: read whole (a page with a few is read a record
        // at a time).
        long[] readWhole = [.. reads.Where(request => request.Length >= PageSize && Touches(request, regions.CStart, regions.CEnd))
            .Select(request => request.Address / PageSize).Distinct()];
        Assert.True(readWhole.Length >= 15, $"{readWhole.Length} pages of region C read whole");

        reads.Clear();
        CompactionResult second = await store.CompactAsync(regions.CStart);
        Assert.True(second.RecordsExamined >= RegionKeys, $"{second.RecordsExamined} records examined");
        // Region B's keys all have their newest records in region C.
        long[] readAgain = [.. reads.Where(request => readWhole.Any(page =>
            Touches(request, page * PageSize, (page + 1) * PageSize))).Select(request => request.Address)];
        Assert.Empty(readAgain);
        Assert.Equal(0, second.RecordsCopied);

        await AssertValuesAsync(session, newerFor: key => key);
    }

    [Fact]
    public async Task A_key_kept_for_another_key_sharing_the_index_entry_does_not_drop_a_live_record()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 24));
        using var store = new CountStore(
            Settings(device), new CountFunctions(HashMode.TwinsAMillionApart));
        using var session = store.NewSession();
        // Region C holds, instead of B's keys, their twins: same hash, so the entry of each key of B leads first to its
        // twin's newer record, kept by the first compaction.
        Regions regions = Write(session, store, newerFor: key => key + Twin);

        await store.CompactAsync(regions.BStart);
        CompactionResult second = await store.CompactAsync(regions.CStart);

        Assert.True(second.RecordsCopied > 0, "the keys whose twins were written after them were copied");
        for (long key = RegionKeys; key < 2 * RegionKeys; key++)
        {
            Assert.Equal(1, (await session.ReadAsync(key)).Output);
            Assert.Equal(2, (await session.ReadAsync(key + Twin)).Output);
        }
    }

    [Fact]
    public async Task Records_shifted_off_their_slots_by_expiring_ones_are_read_and_still_found_dead()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 24));
        using var store = new CountStore(Settings(device), new CountFunctions());
        using var session = store.NewSession();
        // Region C's records of G carry an expiry word: a record of B's keys after one lies off the fixed-size slots.
        Regions regions = Write(session, store, newerFor: key => key, expiring: true);

        await store.CompactAsync(regions.BStart);
        CompactionResult second = await store.CompactAsync(regions.CStart);

        Assert.Equal(0, second.RecordsCopied);
        await AssertValuesAsync(session, newerFor: key => key);
    }

    /// <summary>Region A: keys G (value 1); B: keys K (value 1); C: G (value 2) and, for each key of K, the key
    /// <paramref name="newerFor"/> gives (value 2), a G and a K in turn; then fillers, so that C lies on the device.</summary>
    private static Regions Write(
        CountSession session,
        CountStore store,
        Func<long, long> newerFor,
        bool expiring = false)
    {
        for (long key = 0; key < RegionKeys; key++)
        {
            session.Upsert(key, 1);
        }

        long bStart = store.TailAddress;
        for (long key = RegionKeys; key < 2 * RegionKeys; key++)
        {
            session.Upsert(key, 1);
        }

        long cStart = store.TailAddress;
        for (long key = 0; key < RegionKeys; key++)
        {
            if (expiring)
            {
                session.Upsert(key, 2, Expiration.After(TimeSpan.FromHours(1)));
            }
            else
            {
                session.Upsert(key, 2);
            }

            session.Upsert(newerFor(key + RegionKeys), 2);
        }

        long cEnd = store.TailAddress;
        for (long key = 4 * RegionKeys; key < 8 * RegionKeys; key++)
        {
            session.Upsert(key, 1);
        }

        session.CompletePending(wait: true);
        Assert.True(cEnd <= store.HeadAddress, "region C lies on the device");
        return new Regions(bStart, cStart, cEnd);
    }

    private static async Task AssertValuesAsync(
        CountSession session, Func<long, long> newerFor)
    {
        for (long key = 0; key < RegionKeys; key++)
        {
            Assert.Equal(2, (await session.ReadAsync(key)).Output);
            Assert.Equal(2, (await session.ReadAsync(newerFor(key + RegionKeys))).Output);
        }

        for (long key = 4 * RegionKeys; key < 8 * RegionKeys; key++)
        {
            Assert.Equal(1, (await session.ReadAsync(key)).Output);
        }
    }

    private static bool Touches(DeviceRequest request, long from, long until) =>
        request.Address < until && request.Address + request.Length > from;

    private static StoreSettings Settings(StorageDevice device) =>
        StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0, ReadCacheBytes = 0 };

    private sealed record Regions(long BStart, long CStart, long CEnd);
}
