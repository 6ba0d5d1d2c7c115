using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Compaction;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;
using CountStore = HybridKVStore<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Compaction drops a record that a flushed record of its own key was linked in front of, by the key the flush noted
/// (<see cref="HybridKV.Compaction.SupersededKeys{TKey, TValue}"/>), and never takes another key's link for one of its
/// own.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class SupersededKeysTests
{
    // 128 records of 32 bytes a page of 4 KiB; the store's memory is 16 pages.
    private const int Keys = 2048;
    private const long Twin = 1_000_000;

    [Fact]
    public async Task Records_a_flushed_record_of_their_key_was_linked_in_front_of_are_dropped_by_its_noted_key()
    {
        using var device = new MemoryDevice(512, 1L << 24);
        using var store = new CountStore(Settings(device), new CountFunctions());
        using var session = store.NewSession();
        (long newerStart, _) = Write(session, store, newerFor: key => key);

        CompactionResult result = await store.CompactAsync(newerStart);

        // The range ends at a page boundary, a record or two short of the newer records.
        Assert.InRange(result.RecordsExamined, Keys - 4, Keys);
        Assert.Equal(0, result.RecordsCopied);
        // Every record of the range has a newer one of its key, linked in front of it and flushed: none is looked up.
        Assert.Equal(result.RecordsExamined, store.Engine.Superseded!.RecordsDropped);
        for (long key = 0; key < Keys; key++)
        {
            Assert.Equal(2, (await session.ReadAsync(key)).Output);
        }
    }

    [Fact]
    public async Task A_key_noted_for_another_key_sharing_the_index_entry_does_not_drop_a_live_record()
    {
        using var device = new MemoryDevice(512, 1L << 24);
        using var store = new CountStore(Settings(device), new CountFunctions(HashMode.TwinsAMillionApart));
        using var session = store.NewSession();
        // Each key's twin hashes alike: its record is linked in front of the key's, and the flush notes the twin there.
        (long newerStart, long firstAddress) = Write(session, store, newerFor: key => key + Twin);
        // The flush noted the twin's key at key 0's record: the note is there, and it is another key's.
        store.Engine.Superseded!.TakeUp(store.BeginAddress);
        Assert.True(store.Engine.Superseded.TryGetKey(firstAddress, out long noted));
        Assert.Equal(Twin, noted);

        CompactionResult result = await store.CompactAsync(newerStart);

        Assert.InRange(result.RecordsExamined, Keys - 4, Keys);
        Assert.Equal(result.RecordsExamined, result.RecordsCopied);
        Assert.Equal(0, store.Engine.Superseded!.RecordsDropped);
        for (long key = 0; key < Keys; key++)
        {
            Assert.Equal(1, (await session.ReadAsync(key)).Output);
            Assert.Equal(2, (await session.ReadAsync(key + Twin)).Output);
        }
    }

    /// <summary>Keys 0 to <see cref="Keys"/> (value 1), then for each the key <paramref name="newerFor"/> gives (value
    /// 2), then fillers, so that both lie on the device, flushed after compaction gave the flushes their batches.
    /// Returns where the newer records start, and where key 0's record lies.</summary>
    private static (long NewerStart, long FirstAddress) Write(CountSession session, CountStore store, Func<long, long> newerFor)
    {
        // Flushes note links only in batches compaction provides: it does so whenever it runs, or at page turns while
        // automatic compaction is on (these stores have it off, so nothing else takes the batches up meanwhile).
        store.Engine.Superseded!.TakeUp(store.BeginAddress);
        long firstAddress = store.TailAddress;
        for (long key = 0; key < Keys; key++)
        {
            session.Upsert(key, 1);
        }

        long newerStart = store.TailAddress;
        for (long key = 0; key < Keys; key++)
        {
            session.Upsert(newerFor(key), 2);
        }

        long newerEnd = store.TailAddress;
        for (long key = 4 * Keys; key < 8 * Keys; key++)
        {
            session.Upsert(key, 1);
        }

        session.CompletePending(wait: true);
        Assert.True(newerEnd <= store.HeadAddress, "the newer records lie on the device");
        return (newerStart, firstAddress);
    }

    private static StoreSettings Settings(StorageDevice device) =>
        StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0, ReadCacheBytes = 0 };
}
