using System.Runtime.CompilerServices;
using HybridKV.Log;

namespace HybridKV.Compaction;

/// <summary>
/// For records of the log, the key of the record linked in front of each one. The CAS that links a new record keeps
/// the entry's old address as the new record's previous address (FASTER Alg. 3), so every record names the one it was
/// put in front of; flushes note those links (<see cref="FlushedLinks"/>) as they walk their pages for the checksums,
/// and compaction takes them up here, on its own thread. When the key noted for a record is its own, a newer record of
/// its key exists and the record is dead: compaction drops it with no index look-up, no chain and no device read. A
/// noted key that is not the record's own (another key sharing its index entry, or one of the two entries an index
/// split left leading to it) decides nothing: the record takes the index path as before.
/// </summary>
/// <remarks>
/// Records of the fixed layout; a key is noted at its record's slot (<see cref="RecordSlots{TKey, TValue}"/>), in an
/// entry of the record's page given when the page's first link arrives, up to <see cref="MaxBytes"/> (and the links'
/// own batches, <see cref="FlushedLinks"/>). A record is noted nothing when its page had no entry (the budget), when
/// the flush found no free batch (compaction had not taken them up), or when it was updated in place; it then goes the
/// index way. Only compaction reads or writes the entries, on its thread or, between compactions, on the automatic
/// loop's while it holds the compactions' semaphore: a page's entry is given to another page once the begin address
/// has passed it, with nothing else to wait for. A store whose page is too large for an entry and two batches of links
/// within the budgets notes nothing.
/// </remarks>
internal sealed class SupersededKeys<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    /// <summary>The most bytes of keys noted (past it, pages are noted nothing).</summary>
    public const long MaxBytes = 32L << 20;

    /// <summary>The most bytes of links waiting for compaction to take them up.</summary>
    public const long MaxLinkBytes = 16L << 20;

    private readonly PageSlotKeys<TKey>?[] _ring;
    private readonly int _pageSize;
    private readonly int _pageBits;
    private readonly int _slots;
    private readonly int _maxEntries;
    private int _entries;
    private long _spentAtBegin = -1;

    /// <param name="pageSize">The log's page size.</param>
    public SupersededKeys(int pageSize)
    {
        System.Diagnostics.Debug.Assert(IsSupported(pageSize), "Records of the fixed layout, within the budgets.");
        _pageSize = pageSize;
        _pageBits = System.Numerics.BitOperations.Log2((uint)pageSize);
        _slots = RecordSlots<TKey, TValue>.PerPage(pageSize);
        _maxEntries = (int)Math.Max(1, MaxBytes / EntryBytes);
        _ring = new PageSlotKeys<TKey>?[(int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)_maxEntries)];
        Links = new FlushedLinks(LinkBytes, _slots + 1, MaxLinkBytes);
    }

    /// <summary>Whether records of a store with pages of <paramref name="pageSize"/> bytes can be noted: those of the
    /// fixed layout, where a page's entry and two pages' links fit the budgets.</summary>
    public static bool IsSupported(int pageSize)
    {
        if (LogRecord<TKey, TValue>.IsVariable)
        {
            return false;
        }

        int slots = RecordSlots<TKey, TValue>.PerPage(pageSize);
        return PageSlotKeys<TKey>.BytesFor(slots) <= MaxBytes && FlushedLinks.Fits(LinkBytes, slots + 1, MaxLinkBytes);
    }

    private static int LinkBytes => sizeof(long) + Unsafe.SizeOf<TKey>();

    /// <summary>Where flushes note their records' links.</summary>
    public FlushedLinks Links { get; }

    /// <summary>Records compactions dropped by a key noted here (for tests and diagnostics).</summary>
    public long RecordsDropped { get; private set; }

    private long EntryBytes => PageSlotKeys<TKey>.BytesFor(_slots) + 64;

    /// <summary>
    /// Compaction's: notes the links the flushes gathered since, and provides the flushes with batches again. Links
    /// to records below <paramref name="beginAddress"/> are dropped (those records are gone).
    /// </summary>
    public void TakeUp(long beginAddress)
    {
        // Only the batches filled by now: flushes refill those handed back meanwhile, and a compaction that called this
        // between two pages would otherwise not get back to its pages while writers keep flushing.
        for (int batches = Links.FilledCount; batches > 0 && Links.TryTakeFilled(out FlushedLinks.Batch? batch); batches--)
        {
            for (int i = 0; i < batch.Count; i++)
            {
                if (i + NotesAhead < batch.Count)
                {
                    // Each note lands somewhere else in megabytes of keys: its lines are asked for a few notes early,
                    // so that the misses overlap (the scatter was a sixth of the compaction's samples without).
                    Prefetch(batch.PreviousAddressAt(i + NotesAhead, out TKey _));
                }

                long previousAddress = batch.PreviousAddressAt(i, out TKey key);
                if (previousAddress >= beginAddress)
                {
                    Note(previousAddress, in key, beginAddress);
                }
            }

            Links.Return(batch);
        }

        Links.Provide();
    }

    /// <summary>Counts <paramref name="records"/> a compaction dropped by their noted keys.</summary>
    public void CountDropped(int records) => RecordsDropped += records;

    /// <summary>The key noted for the record at <paramref name="address"/>: that of a record linked in front of it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryGetKey(long address, out TKey key)
    {
        if (_ring[RingIndex(address)] is { } entry && entry.Page == (address & ~(_pageSize - 1L)) &&
            RecordSlots<TKey, TValue>.TryGet(address, _pageSize - 1L, _slots, out int slot))
        {
            return entry.TryGet(slot, out key);
        }

        key = default;
        return false;
    }

    /// <summary>How many notes ahead of the one being written a note's lines are prefetched.</summary>
    private const int NotesAhead = 8;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Prefetch(long previousAddress)
    {
        if (_ring[RingIndex(previousAddress)] is { } entry && entry.Page == (previousAddress & ~(_pageSize - 1L)) &&
            RecordSlots<TKey, TValue>.TryGet(previousAddress, _pageSize - 1L, _slots, out int slot))
        {
            entry.Prefetch(slot);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Note(long previousAddress, in TKey key, long beginAddress)
    {
        if (!RecordSlots<TKey, TValue>.TryGet(previousAddress, _pageSize - 1L, _slots, out int slot))
        {
            return;
        }

        long page = previousAddress & ~(_pageSize - 1L);
        ref PageSlotKeys<TKey>? place = ref _ring[RingIndex(previousAddress)];
        if (place?.Page != page && !TryGive(ref place, page, beginAddress))
        {
            return;
        }

        place!.Set(slot, in key);
    }

    /// <summary>Gives the page at <paramref name="page"/> the entry at <paramref name="place"/> if that holds a page the
    /// begin address passed, or a new one, or one another place no longer needs; false if the budget is spent.</summary>
    private bool TryGive(ref PageSlotKeys<TKey>? place, long page, long beginAddress)
    {
        if (place is { } held)
        {
            if (held.Page != PageSlotKeys<TKey>.NoPage && held.Page + _pageSize > beginAddress)
            {
                // A page a ring away still in the log: the log outgrew the budget here.
                return false;
            }

            held.Assign(page);
            return true;
        }

        if (_entries < _maxEntries)
        {
            _entries++;
            place = new PageSlotKeys<TKey>(_slots);
        }
        else if (beginAddress == _spentAtBegin || !TryTakeUnused(beginAddress, out place))
        {
            // The budget is spent until the begin address moves: no search of the ring for every link meanwhile.
            _spentAtBegin = beginAddress;
            return false;
        }

        place.Assign(page);
        return true;
    }

    /// <summary>An entry of a page the begin address passed, taken from its place (pages a ring apart then share none).</summary>
    private bool TryTakeUnused(long beginAddress, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PageSlotKeys<TKey>? entry)
    {
        for (int i = 0; i < _ring.Length; i++)
        {
            if (_ring[i] is { } candidate && (candidate.Page == PageSlotKeys<TKey>.NoPage || candidate.Page + _pageSize <= beginAddress))
            {
                _ring[i] = null;
                entry = candidate;
                return true;
            }
        }

        entry = null;
        return false;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int RingIndex(long address) => (int)((address >> _pageBits) & (_ring.Length - 1));
}
