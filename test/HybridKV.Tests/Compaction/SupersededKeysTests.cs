using HybridKV.Compaction;
using HybridKV.Devices;
using HybridKV.Log;
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

    [Fact]
    public void A_pages_notes_are_laid_out_by_slot_and_a_later_note_reaches_the_page_laid_out()
    {
        var keys = new SupersededKeys<long, long>(NotesPageSize);
        long page = 4L * NotesPageSize;
        // Every slot of the page, more notes than one chunk holds.
        Note(keys, notedFrom: 0, Enumerable.Range(0, SlotsPerPage).Select(slot => (SlotAddress(page, slot), 10L * slot)));
        for (int slot = 0; slot < SlotsPerPage; slot++)
        {
            Assert.True(keys.TryGetKey(SlotAddress(page, slot), out long key), $"slot {slot}");
            Assert.Equal(10L * slot, key);
        }

        // A note for a slot already noted (the two entries of an index split), taken up while the page is laid out:
        // the later one stands. An address between two slots has none.
        Note(keys, notedFrom: 0, [(SlotAddress(page, 5), 99)]);
        Assert.True(keys.TryGetKey(SlotAddress(page, 5), out long later));
        Assert.Equal(99, later);
        Assert.False(keys.TryGetKey(SlotAddress(page, 5) + 8, out _));
        Assert.False(keys.TryGetKey(SlotAddress(page + NotesPageSize, 5), out _));
        // Laid out afresh (another page was in between): still the later note.
        Assert.True(keys.TryGetKey(SlotAddress(page, 5), out long again));
        Assert.Equal(99, again);
    }

    [Fact]
    public void Notes_answer_only_for_their_own_page_and_a_chunk_given_to_another_brings_none_of_its_old_notes()
    {
        var keys = new SupersededKeys<long, long>(NotesPageSize);
        long first = 0;
        // A page a ring apart: the same place in the ring.
        long sharer = first + ((long)keys.RingLength * NotesPageSize);
        Note(keys, notedFrom: 0, Enumerable.Range(0, SlotsPerPage).Select(slot => (SlotAddress(first, slot), (long)slot)));
        // The place is held by a page still in the log: noted nothing, and the first page's notes answer nothing for it.
        Note(keys, notedFrom: 0, [(SlotAddress(sharer, 3), 42)]);
        Assert.True(keys.TryGetKey(SlotAddress(first, 3), out _));
        for (int slot = 0; slot < SlotsPerPage; slot++)
        {
            Assert.False(keys.TryGetKey(SlotAddress(sharer, slot), out _), $"slot {slot}");
        }

        // Once notes start past the first page, the sharer takes its place and a chunk the first page gave back: its one
        // note is all it holds.
        Note(keys, notedFrom: NotesPageSize, [(SlotAddress(sharer, 3), 42)]);
        for (int slot = 0; slot < SlotsPerPage; slot++)
        {
            Assert.Equal(slot == 3, keys.TryGetKey(SlotAddress(sharer, slot), out long key));
            Assert.True(slot != 3 || key == 42, $"slot 3 holds {key}");
        }

        Assert.False(keys.TryGetKey(SlotAddress(first, 3), out _));
    }

    [Fact]
    public void Once_the_budget_is_spent_pages_below_where_notes_start_give_their_room_to_new_ones()
    {
        var keys = new SupersededKeys<long, long>(NotesPageSize);
        // Every slot of a page a chunk and a half: as many pages as it takes to spend the budget.
        int pages = (int)(SupersededKeys<long, long>.MaxBytes / (SlotsPerPage * (sizeof(int) + sizeof(long))));
        for (int page = 0; page < pages; page++)
        {
            Note(keys, notedFrom: 0, Enumerable.Range(0, SlotsPerPage).Select(slot => (SlotAddress(page * (long)NotesPageSize, slot), (long)slot)));
        }

        long newPage = (pages + 1L) * NotesPageSize;
        Note(keys, notedFrom: 0, [(SlotAddress(newPage, 1), 7)]);
        Assert.False(keys.TryGetKey(SlotAddress(newPage, 1), out _));
        Assert.True(keys.TryGetKey(SlotAddress(pages / 2 * (long)NotesPageSize, 1), out _));

        // Notes from the tenth page on: the first nine pages' room goes to the new page's notes.
        long notedFrom = 9L * NotesPageSize;
        Note(keys, notedFrom, [(SlotAddress(newPage, 1), 7)]);
        Assert.True(keys.TryGetKey(SlotAddress(newPage, 1), out long key));
        Assert.Equal(7, key);
        Assert.False(keys.TryGetKey(SlotAddress(0, 1), out _));
        Assert.True(keys.TryGetKey(SlotAddress(notedFrom, 1), out _));
    }

    // 2048 slots of 32 bytes a page: more notes than a chunk of them holds.
    private const int NotesPageSize = 1 << 16;
    private static readonly int SlotsPerPage = NotesPageSize / LogRecord<long, long>.FixedSize;

    private static long SlotAddress(long page, int slot) => page + RecordSlots<long, long>.FirstOffset(page) +
        ((long)slot * LogRecord<long, long>.FixedSize);

    /// <summary>Hands <paramref name="links"/> to <paramref name="keys"/> as flushes do, a batch at a time, each taken
    /// up at once with notes from <paramref name="notedFrom"/> on.</summary>
    private static void Note(SupersededKeys<long, long> keys, long notedFrom, IEnumerable<(long Previous, long Key)> links)
    {
        // Flushes get batches only once compaction provided them.
        keys.TakeUp(notedFrom);
        foreach ((long Previous, long Key)[] chunk in links.Chunk(SlotsPerPage))
        {
            FlushedLinks.Batch batch = keys.Links.TakeFree() ?? throw new InvalidOperationException("no free batch");
            foreach ((long previous, long key) in chunk)
            {
                batch.Add(previous, in key);
            }

            keys.Links.Publish(batch);
            keys.TakeUp(notedFrom);
        }
    }

    private static StoreSettings Settings(StorageDevice device) =>
        StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0, ReadCacheBytes = 0 };
}
