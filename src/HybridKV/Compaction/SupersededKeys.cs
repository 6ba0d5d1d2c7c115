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
/// Records of the fixed layout; a note is the slot of the record named (<see cref="RecordSlots{TKey, TValue}"/>) and
/// the key, appended to its page's notes in the order the links came, in chunks up to <see cref="MaxBytes"/> (and the
/// links' own batches, <see cref="FlushedLinks"/>). A page's notes are laid out by slot when compaction first asks about
/// one of its records, in one entry reused page after page (<see cref="PageSlotKeys{TKey}"/>): the notes go to a
/// handful of pages' ends, lines the cache holds, and the look-ups to one page's slots, where writing each note at its
/// slot among megabytes of every page's keys waited for a line from memory per note (a sixth of the compaction's
/// samples). A record is noted nothing when its page had no room in the ring or the budget, when the flush found no
/// free batch (compaction had not taken them up), or when it was updated in place; it then goes the index way. Only
/// compaction reads or writes the notes, on its thread or, between compactions, on the automatic loop's while it holds
/// the compactions' semaphore: a page's notes are given back, once the begin address (or the running compaction's
/// walk) has passed it, when its place in the ring or a chunk is wanted, with nothing else to wait for. A store whose
/// page is too large for its laid-out entry and two batches of links within the budgets, or whose key makes a note
/// larger than a chunk, notes nothing.
/// </remarks>
internal sealed unsafe class SupersededKeys<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    /// <summary>The most bytes of notes (past it, records are noted nothing).</summary>
    public const long MaxBytes = 32L << 20;

    /// <summary>The most bytes of links waiting for compaction to take them up.</summary>
    public const long MaxLinkBytes = 16L << 20;

    /// <summary>The bytes of a chunk of a page's notes.</summary>
    private const int ChunkBytes = 16 << 10;

    private static readonly int s_noteBytes = sizeof(int) + Unsafe.SizeOf<TKey>();
    private static readonly int s_notesPerChunk = ChunkBytes / s_noteBytes;

    // Each page's notes at its page number modulo the ring's length: no dictionary look-up per note. A page needs a
    // chunk for any note, so the budget never holds notes of more pages than the ring has places.
    private readonly PageNotes?[] _ring;
    private readonly Stack<byte[]> _freeChunks = new();
    private readonly PageSlotKeys<TKey> _laidOut;
    private readonly int _pageSize;
    private readonly int _pageBits;
    private readonly int _slots;
    private readonly int _maxChunks;
    private int _chunks;
    private long _spentAt = -1;

    /// <param name="pageSize">The log's page size.</param>
    public SupersededKeys(int pageSize)
    {
        System.Diagnostics.Debug.Assert(IsSupported(pageSize), "Records of the fixed layout, within the budgets.");
        _pageSize = pageSize;
        _pageBits = System.Numerics.BitOperations.Log2((uint)pageSize);
        _slots = RecordSlots<TKey, TValue>.PerPage(pageSize);
        _maxChunks = (int)((MaxBytes - PageSlotKeys<TKey>.BytesFor(_slots)) / ChunkBytes);
        _ring = new PageNotes?[(int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Math.Max(1, _maxChunks))];
        _laidOut = new PageSlotKeys<TKey>(_slots);
        Links = new FlushedLinks(LinkBytes, _slots + 1, MaxLinkBytes);
    }

    /// <summary>Whether records of a store with pages of <paramref name="pageSize"/> bytes can be noted: those of the
    /// fixed layout, where a page's laid-out notes, a chunk and two pages' links fit the budgets.</summary>
    public static bool IsSupported(int pageSize)
    {
        if (LogRecord<TKey, TValue>.IsVariable)
        {
            return false;
        }

        int slots = RecordSlots<TKey, TValue>.PerPage(pageSize);
        return s_noteBytes <= ChunkBytes && PageSlotKeys<TKey>.BytesFor(slots) + ChunkBytes <= MaxBytes &&
               FlushedLinks.Fits(LinkBytes, slots + 1, MaxLinkBytes);
    }

    private static int LinkBytes => sizeof(long) + Unsafe.SizeOf<TKey>();

    /// <summary>Where flushes note their records' links.</summary>
    public FlushedLinks Links { get; }

    /// <summary>How many pages' notes the ring has places for (pages this many apart share one).</summary>
    internal int RingLength => _ring.Length;

    /// <summary>Records compactions dropped by a key noted here (for tests and diagnostics).</summary>
    public long RecordsDropped { get; private set; }

    /// <summary>
    /// Compaction's: notes the links the flushes gathered since, and provides the flushes with batches again. Links
    /// to records below <paramref name="notedFrom"/> are dropped: those records are gone (below the begin address), or
    /// the compaction running has looked at them already.
    /// </summary>
    public void TakeUp(long notedFrom)
    {
        // Only the batches filled by now: flushes refill those handed back meanwhile, and a compaction that called this
        // between two pages would otherwise not get back to its pages while writers keep flushing.
        for (int batches = Links.FilledCount; batches > 0 && Links.TryTakeFilled(out FlushedLinks.Batch? batch); batches--)
        {
            for (int i = 0; i < batch.Count; i++)
            {
                // The flush wrote the batch on another core: its lines are asked for ahead of use.
                batch.Prefetch(i + LinksAhead);
                long previousAddress = batch.PreviousAddressAt(i, out TKey key);
                if (previousAddress >= notedFrom)
                {
                    Note(previousAddress, in key, notedFrom);
                }
            }

            Links.Return(batch);
        }

        Links.Provide();
    }

    /// <summary>Counts <paramref name="records"/> a compaction dropped by their noted keys.</summary>
    public void CountDropped(int records) => RecordsDropped += records;

    /// <summary>The key noted for the record at <paramref name="address"/>: that of a record linked in front of it.
    /// Lays out the notes of its page first, unless they are the ones laid out (a walk asks page after page).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryGetKey(long address, out TKey key)
    {
        long page = address & ~(_pageSize - 1L);
        if (_laidOut.Page != page)
        {
            LayOut(page);
        }

        if (RecordSlots<TKey, TValue>.TryGet(address, _pageSize - 1L, _slots, out int slot))
        {
            if (slot + SlotsAhead < _slots)
            {
                _laidOut.Prefetch(slot + SlotsAhead);
            }

            return _laidOut.TryGet(slot, out key);
        }

        key = default;
        return false;
    }

    /// <summary>How many slots ahead of the one looked up a walk's laid-out line is prefetched.</summary>
    private const int SlotsAhead = 32;

    /// <summary>How many links ahead of the one being noted a batch's lines are prefetched.</summary>
    private const int LinksAhead = 64;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Note(long previousAddress, in TKey key, long notedFrom)
    {
        if (!RecordSlots<TKey, TValue>.TryGet(previousAddress, _pageSize - 1L, _slots, out int slot))
        {
            return;
        }

        long page = previousAddress & ~(_pageSize - 1L);
        ref PageNotes? place = ref _ring[RingIndex(previousAddress)];
        PageNotes? notes = place;
        if ((notes?.Page != page && !TryGive(ref place, page, notedFrom, out notes)) ||
            (notes!.Next >= notes.End && !TryAddChunk(notes, notedFrom)))
        {
            return;
        }

        byte* next = notes.Next;
        Unsafe.WriteUnaligned(next, slot);
        Unsafe.WriteUnaligned(next + sizeof(int), key);
        notes.Next = next + s_noteBytes;
        if (page == _laidOut.Page)
        {
            _laidOut.Set(slot, in key);
        }
    }

    /// <summary>Lays out the notes of the page at <paramref name="page"/> by slot, in the order they came (of two
    /// notes for one slot, the later stands).</summary>
    private void LayOut(long page)
    {
        _laidOut.Assign(page);
        if (_ring[RingIndex(page)] is not { } notes || notes.Page != page)
        {
            return;
        }

        for (int i = 0; i < notes.Chunks.Count; i++)
        {
            byte* note = Start(notes.Chunks[i]);
            byte* end = i == notes.Chunks.Count - 1 ? notes.Next : note + (s_notesPerChunk * s_noteBytes);
            for (; note < end; note += s_noteBytes)
            {
                _laidOut.Set(Unsafe.ReadUnaligned<int>(note), Unsafe.ReadUnaligned<TKey>(note + sizeof(int)));
            }
        }
    }

    /// <summary>Gives the page at <paramref name="page"/> the place <paramref name="place"/>, if that holds nothing or
    /// a page below <paramref name="notedFrom"/> (whose chunks go back); false if it holds a page still in the log.</summary>
    private bool TryGive(ref PageNotes? place, long page, long notedFrom,
        [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PageNotes? notes)
    {
        notes = place ??= new PageNotes();
        if (notes.Page != PageSlotKeys<TKey>.NoPage && !IsPassed(notes, notedFrom))
        {
            // A page a ring away still in the log: more pages than the budget could note.
            return false;
        }

        GiveBack(notes);
        notes.Page = page;
        return true;
    }

    /// <summary>A chunk more for <paramref name="notes"/>: a free one, a new one within the budget, or one of a page
    /// below <paramref name="notedFrom"/>; false if none is.</summary>
    private bool TryAddChunk(PageNotes notes, long notedFrom)
    {
        if (!_freeChunks.TryPop(out byte[]? chunk))
        {
            if (_chunks < _maxChunks)
            {
                _chunks++;
                chunk = GC.AllocateUninitializedArray<byte>(ChunkBytes, pinned: true);
            }
            else if (notedFrom == _spentAt || !GiveBackBelow(notedFrom) || !_freeChunks.TryPop(out chunk))
            {
                // The budget is spent until where notes start moves: no search of the ring for every note meanwhile.
                _spentAt = notedFrom;
                return false;
            }
        }

        notes.Chunks.Add(chunk);
        notes.Next = Start(chunk);
        notes.End = notes.Next + (s_notesPerChunk * s_noteBytes);
        return true;
    }

    /// <summary>Gives back the chunks of every page below <paramref name="notedFrom"/>; whether any came back.</summary>
    private bool GiveBackBelow(long notedFrom)
    {
        int before = _freeChunks.Count;
        foreach (PageNotes? notes in _ring)
        {
            if (notes is not null && notes.Page != PageSlotKeys<TKey>.NoPage && IsPassed(notes, notedFrom))
            {
                GiveBack(notes);
            }
        }

        return _freeChunks.Count > before;
    }

    /// <summary>Whether notes start past the page of <paramref name="notes"/>: none of them is of use any more.</summary>
    private bool IsPassed(PageNotes notes, long notedFrom) => notes.Page + _pageSize <= notedFrom;

    private void GiveBack(PageNotes notes)
    {
        foreach (byte[] chunk in notes.Chunks)
        {
            _freeChunks.Push(chunk);
        }

        notes.Chunks.Clear();
        notes.Next = null;
        notes.End = null;
        if (notes.Page == _laidOut.Page)
        {
            _laidOut.Forget();
        }

        notes.Page = PageSlotKeys<TKey>.NoPage;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int RingIndex(long address) => (int)((address >> _pageBits) & (_ring.Length - 1));

    /// <summary>A chunk's first byte: chunks are pinned.</summary>
    private static byte* Start(byte[] chunk) =>
        (byte*)Unsafe.AsPointer(ref System.Runtime.InteropServices.MemoryMarshal.GetArrayDataReference(chunk));

    /// <summary>One page's notes: slot and key, in the order they came, in pinned chunks, the last one filled up to
    /// <see cref="Next"/> (before the first chunk, <see cref="Next"/> and <see cref="End"/> are both null).</summary>
    private sealed class PageNotes
    {
        public long Page = PageSlotKeys<TKey>.NoPage;
        public readonly List<byte[]> Chunks = [];
        public byte* Next;
        public byte* End;
    }
}
