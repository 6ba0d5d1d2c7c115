using System.Runtime.CompilerServices;
using HybridKV.Log;

namespace HybridKV.Compaction;

/// <summary>
/// The keys of the log's pages on the device, kept from the check pass that read them for the compactions after it.
/// Each compaction's checks ask, of the newest record of a key (on the device, newer than the range), whether it has
/// that key, and every page of the device log newer than the range holds such records: the check pass read them all,
/// 50-58 MiB for a range of 24 in the uniform soak, and the next compaction read most of them again. A page's bytes
/// never change once it is below the head, so its keys, read once and checked against their records' checksums,
/// answer those checks for every compaction until the begin address passes the page.
/// </summary>
/// <remarks>
/// Records of the fixed layout only. A key is kept at its record's slot when the record lies where a record of the fixed size
/// without an expiry word would (an expiring record shifts the ones after it off their slots: those are not kept), is
/// valid and its checksum matches; a key not kept is answered by reading its record, as before. Memory: at most
/// <see cref="MaxBytes"/>, the keys and a flag per slot (<see cref="PageSlotKeys{TKey}"/>); pages are dropped once the begin address passed them.
/// </remarks>
internal sealed class DevicePageKeys<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    /// <summary>The most bytes of keys kept (past it, pages are read as before).</summary>
    public const long MaxBytes = 32L << 20;

    // A page's keys at its page number modulo the ring's length (the page is checked on every look-up): no dictionary
    // look-up per record. Twice the pages the budget holds, so that pages a little apart rarely meet.
    private readonly PageSlotKeys<TKey>?[] _ring;
    // Keys of pages dropped, for the next pages kept: arrays allocated afresh each compaction had the kernel zeroing
    // new memory for a seventh of the compaction's time.
    private readonly Stack<PageSlotKeys<TKey>> _free = new();
    private readonly int _pageSize;
    private readonly int _pageBits;
    private readonly int _slots;
    private int _pages;

    /// <param name="pageSize">The log's page size.</param>
    public DevicePageKeys(int pageSize)
    {
        _pageSize = pageSize;
        _pageBits = System.Numerics.BitOperations.Log2((uint)pageSize);
        // Records of the variable layout have no slots to keep keys at.
        _slots = RecordSlots<TKey, TValue>.PerPage(pageSize);
        _ring = new PageSlotKeys<TKey>?[_slots == 0 ? 1 : (int)System.Numerics.BitOperations.RoundUpToPowerOf2(
            (uint)Math.Max(1, 2 * (MaxBytes / PageBytes)))];
    }

    /// <summary>Record slots in a page (0 for the variable layout, whose keys are never kept).</summary>
    public int SlotsPerPage => _slots;

    /// <summary>Whether another page's keys fit.</summary>
    public bool HasRoom => _slots > 0 && ((long)_pages + 1) * PageBytes <= MaxBytes;

    /// <summary>Whether the page at <paramref name="page"/> is held.</summary>
    public bool Holds(long page) => _ring[RingIndex(page)]?.Page == page;

    private long PageBytes => PageSlotKeys<TKey>.BytesFor(_slots) + 64;

    /// <summary>The key of the record at <paramref name="address"/>, if its page's keys are held and it was kept.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryGetKey(long address, out TKey key)
    {
        if (_ring[RingIndex(address)] is { } keys && keys.Page == (address & ~(_pageSize - 1L)) &&
            RecordSlots<TKey, TValue>.TryGet(address, _pageSize - 1L, _slots, out int slot))
        {
            return keys.TryGet(slot, out key);
        }

        key = default;
        return false;
    }

    /// <summary>Starts loading the key of the record at <paramref name="address"/>, if its page's keys are held: a
    /// look-up a few records later then finds it in cache (the keys are megabytes, each look-up somewhere else).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Prefetch(long address)
    {
        if (_ring[RingIndex(address)] is { } keys && keys.Page == (address & ~(_pageSize - 1L)) &&
            RecordSlots<TKey, TValue>.TryGet(address, _pageSize - 1L, _slots, out int slot))
        {
            keys.Prefetch(slot);
        }
    }

    /// <summary>
    /// Keeps the keys of the page at <paramref name="page"/>, whose whole part below <paramref name="end"/> the
    /// <paramref name="reader"/> holds, read from the device. A record that is damaged, or that a walk cannot step over,
    /// is not kept (nor, in the second case, anything after it): a check that needs it reads it, and fails there.
    /// </summary>
    public void Keep(long page, long end, LogReader<TKey, TValue> reader)
    {
        System.Diagnostics.Debug.Assert(HasRoom && !Holds(page), "Room for a page not held yet.");
        ref PageSlotKeys<TKey>? place = ref _ring[RingIndex(page)];
        if (place is not null)
        {
            // Another page a whole ring away (pages kept are rarely that far apart): it gives way.
            Release(ref place);
        }

        PageSlotKeys<TKey> keys = _free.TryPop(out PageSlotKeys<TKey>? reused) ? reused : new PageSlotKeys<TKey>(_slots);
        keys.Assign(page);
        int fixedSize = LogRecord<TKey, TValue>.FixedSize;
        long first = page + RecordSlots<TKey, TValue>.FirstOffset(page);
        VarBytes scratch = default;
        PageRecords<TKey, TValue> walk = reader.Records(page, end);
        try
        {
            while (walk.MoveNext())
            {
                LogRecord<TKey, TValue> record = walk.Current;
                long offset = walk.Address - first;
                if (offset % fixedSize != 0 || record.Header.Invalid || !record.ChecksumMatches)
                {
                    continue;
                }

                keys.Set((int)(offset / fixedSize), in record.KeyRef(ref scratch));
            }
        }
        catch (InvalidDataException)
        {
            // Lengths that run past the page: the records walked so far are kept, the rest are read when needed.
        }

        place = keys;
        _pages++;
    }

    /// <summary>Forgets the pages that lie wholly below <paramref name="address"/> (the begin address).</summary>
    public void DropBelow(long address)
    {
        for (int i = 0; i < _ring.Length; i++)
        {
            if (_ring[i] is { } keys && keys.Page + _pageSize <= address)
            {
                Release(ref _ring[i]);
            }
        }
    }

    private void Release(ref PageSlotKeys<TKey>? place)
    {
        _free.Push(place!);
        place = null;
        _pages--;
    }

    private int RingIndex(long address) => (int)((address >> _pageBits) & (_ring.Length - 1));
}
