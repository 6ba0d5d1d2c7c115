using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Copying the live records of a read-only page forward to the tail, so that they are still in memory after the page
/// leaves it (lookup-based compaction, as F2 §4 and FASTER's ConditionalCopyToTail do it): a record is live when the
/// index still leads to it, and its copy is linked with a CAS on the entry it saw, so a record that an update, upsert
/// or delete superseded meanwhile is never brought back.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    private const int RecordsBetweenRefreshes = 256;

    /// <summary>
    /// Copies the live records of the in-memory page at <paramref name="pageAddress"/> to the tail when they fill at
    /// most <paramref name="maxLiveBytes"/>; otherwise copies nothing (the page is mostly live: copying it would only
    /// move the same data around memory). The page lies below the safe read-only address, so no thread changes its
    /// records in place.
    /// </summary>
    /// <param name="pageAddress">The page, at or above the head address and below the safe read-only address.</param>
    /// <param name="maxLiveBytes">The most live bytes a page may hold for its records to be copied.</param>
    /// <param name="epochEntry">The caller's epoch row; not protected on entry.</param>
    public PageCompaction CompactPage(long pageAddress, long maxLiveBytes, int epochEntry)
    {
        Epoch.Protect(epochEntry);
        try
        {
            long live = MeasureLiveBytes(pageAddress, maxLiveBytes, epochEntry);
            if (live < 0)
            {
                return PageCompaction.Evicted;
            }

            if (live > maxLiveBytes)
            {
                return new PageCompaction(live, 0, 0, PageCompactionOutcome.MostlyLive);
            }

            return CopyLiveRecords(pageAddress, live, epochEntry);
        }
        finally
        {
            Epoch.Unprotect(epochEntry);
        }
    }

    /// <summary>
    /// The bytes of the page's live records, or -1 if the page left memory meanwhile. Once an eighth of the page is
    /// walked, a page whose share of live records so far puts it over <paramref name="maxLiveBytes"/> stops there with
    /// that share applied to the whole page: in a store larger than memory nearly every page is mostly live, and
    /// walking each to its end took a quarter of a core from the log's compaction. The share of a page's oldest
    /// records understates the whole page's (updates have had longer to supersede them), so stopping errs toward
    /// "mostly live", the side that copies nothing.
    /// </summary>
    private long MeasureLiveBytes(long pageAddress, long maxLiveBytes, int epochEntry)
    {
        if (HasLeftMemory(pageAddress))
        {
            return -1;
        }

        long live = 0;
        PageRecords<TKey, TValue> walk = WalkPage(pageAddress);
        int sinceRefresh = 0;
        long sampled = Log.PageSize / 8;
        while (walk.MoveNext())
        {
            if (!StillInMemoryAfterRefresh(pageAddress, ref sinceRefresh, epochEntry))
            {
                return -1;
            }

            if (IsLive(walk.Current, walk.Address, out _))
            {
                live += walk.Current.Size;
            }

            long walked = walk.Address + walk.Current.Size - pageAddress;
            if (walked >= sampled && sinceRefresh == 0 && live * Log.PageSize / walked > maxLiveBytes)
            {
                return Math.Min(Log.PageSize, live * Log.PageSize / walked);
            }
        }

        return live;
    }

    private PageCompaction CopyLiveRecords(long pageAddress, long live, int epochEntry)
    {
        long copiedRecords = 0;
        long copiedBytes = 0;
        PageRecords<TKey, TValue> walk = WalkPage(pageAddress);
        int sinceRefresh = 0;
        while (walk.MoveNext())
        {
            if (!StillInMemoryAfterRefresh(pageAddress, ref sinceRefresh, epochEntry))
            {
                return new PageCompaction(live, copiedRecords, copiedBytes, PageCompactionOutcome.Stopped);
            }

            CopyForwardOutcome outcome = ConditionalCopyToTail(walk.Current, walk.Address, epochEntry);
            if (outcome == CopyForwardOutcome.Copied)
            {
                copiedRecords++;
                copiedBytes += walk.Current.Size;
            }
            else if (outcome == CopyForwardOutcome.NotNow)
            {
                // Evicted meanwhile, no free frame at the tail, or a checkpoint began: the rest of the page goes to
                // the device with it, which is correct, only slower to read.
                return new PageCompaction(live, copiedRecords, copiedBytes, PageCompactionOutcome.Stopped);
            }
        }

        return new PageCompaction(live, copiedRecords, copiedBytes, PageCompactionOutcome.Copied);
    }

    /// <summary>
    /// Reserves room for a copy, never waiting: false when the tail has no free frame now, or when writing the log to
    /// its device failed (the store reports that to every operation that needs room; copying simply stops). With a
    /// <paramref name="reservation"/>, from its room when it has a slot of this size taken in
    /// <paramref name="stateWord"/>; a copy of the other size while the room lasts is taken alone; otherwise what is
    /// left of the room is released and room is taken for as many copies as its owner still expects of this size.
    /// </summary>
    private bool TryAllocateCopy(int size, int epochEntry, CopyReservation? reservation, long stateWord, out long address)
    {
        if (reservation is not null)
        {
            if (reservation.HasRoomIn(stateWord))
            {
                if (size == reservation.RecordSize)
                {
                    address = reservation.Next;
                    reservation.Next += size;
                    return true;
                }

                // A record of the other size while the room lasts: taken alone, the room kept for its own size.
                return TryAllocateRoom(size, epochEntry, out address);
            }

            ReleaseReservation(reservation);
            // At most an eighth of a page: a room that does not fit in the tail's page leaves the rest of it empty.
            int copies = Math.Min(Math.Min(reservation.Expected, CopyReservation.MaxCopies), Log.PageSize / 8 / size);
            if (copies > 1 && TryAllocateRoom(size * copies, epochEntry, out long room))
            {
                (reservation.Next, reservation.End) = (room + size, room + ((long)size * copies));
                (reservation.RecordSize, reservation.StateWord) = (size, stateWord);
                address = room;
                return true;
            }
        }

        return TryAllocateRoom(size, epochEntry, out address);
    }

    /// <summary>Writes the slots <paramref name="reservation"/> has left as unused records; its owner calls this before
    /// it leaves protection (the slots lie at the tail, which no flush passes while it is protected).</summary>
    public void ReleaseReservation(CopyReservation reservation)
    {
        for (long address = reservation.Next; address < reservation.End; address += reservation.RecordSize)
        {
            Log.GetRecord<TKey, TValue>(address).InitializeUnused(reservation.RecordSize);
        }

        reservation.Next = reservation.End;
    }

    private bool TryAllocateRoom(int size, int epochEntry, out long address)
    {
        try
        {
            return Log.TryAllocate(size, epochEntry, out address) == AllocationResult.Success;
        }
        catch (Devices.StorageDeviceException)
        {
            address = LogAddress.Invalid;
            return false;
        }
    }

    private unsafe PageRecords<TKey, TValue> WalkPage(long pageAddress) =>
        new(Log.PageFrame(pageAddress), pageAddress, Log.PageSize, pageAddress, pageAddress + Log.PageSize,
            fromIsRecordStart: true);

    /// <summary>
    /// Refreshes the epoch every <see cref="RecordsBetweenRefreshes"/> records of a walk, so that it never holds back
    /// page turns or checkpoint phases; false once the page has left memory (its frame may then be reused).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool StillInMemoryAfterRefresh(long pageAddress, ref int sinceRefresh, int epochEntry)
    {
        if (++sinceRefresh < RecordsBetweenRefreshes)
        {
            return true;
        }

        sinceRefresh = 0;
        Epoch.Refresh(epochEntry);
        return !HasLeftMemory(pageAddress);
    }

    /// <summary>Whether the page at <paramref name="pageAddress"/> is below the head (the first page's head is not at
    /// its start, but the page is in memory all the same).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool HasLeftMemory(long pageAddress) => pageAddress + Log.PageSize <= Log.HeadAddress;

    /// <summary>
    /// Whether the record at <paramref name="address"/> is its key's newest: the chain from the index meets no newer
    /// record of the key before it. Needs the address in memory (every newer address then is too). An expired value
    /// is not worth keeping in memory: left where it is, it reads as not found all the same.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool IsLive(LogRecord<TKey, TValue> record, long address, out IndexSlot slot)
    {
        if (record.Header.Invalid || (record.Header.Expiring && HasExpired(record)))
        {
            slot = default;
            return false;
        }

        VarBytes scratch = default;
        ref TKey key = ref record.KeyRef(ref scratch);
        return Index.TryFindEntry(HashOf(in key), out slot) && TraceBackForKey(in key, slot.Address, address) == address;
    }

    /// <summary>
    /// Appends a copy of the read-only record at <paramref name="address"/> and makes it the head of its chain, if the
    /// record is still its key's newest when the CAS lands. The caller holds protection on
    /// <paramref name="epochEntry"/> and has checked that the address was in memory.
    /// </summary>
    private CopyForwardOutcome ConditionalCopyToTail(LogRecord<TKey, TValue> source, long address, int epochEntry)
    {
        while (true)
        {
            if (address < Log.HeadAddress)
            {
                return CopyForwardOutcome.NotNow;
            }

            if (!IsLive(source, address, out IndexSlot slot))
            {
                return CopyForwardOutcome.NotLive;
            }

            CopyForwardOutcome outcome = TryLinkCopy(source, ref slot, epochEntry, address);
            if (outcome != CopyForwardOutcome.NotLive)
            {
                return outcome;
            }

            // Another thread changed the entry: look again whether this record is still the newest.
        }
    }

    /// <summary>
    /// Appends a copy of <paramref name="source"/> whose previous address is the entry <paramref name="slot"/> observed,
    /// and swings the entry to it. <see cref="CopyForwardOutcome.NotLive"/> here means only that the CAS lost: the
    /// caller decides again from the entry's new value.
    /// </summary>
    /// <param name="source">The record to copy: in memory, or in a buffer read from the device.</param>
    /// <param name="slot">The key's entry, which the caller found leading to the source with no newer record of the key.</param>
    /// <param name="epochEntry">The caller's epoch row, protected.</param>
    /// <param name="sourceInMemoryAt">The source's address when it is in a page frame (the allocation may wait for a page
    /// turn and let the frame go), or -1 for a buffer.</param>
    /// <param name="reservation">Room taken for a batch of copies, or null for one taken alone.</param>
    private CopyForwardOutcome TryLinkCopy(
        LogRecord<TKey, TValue> source, ref IndexSlot slot, int epochEntry, long sourceInMemoryAt,
        CopyReservation? reservation = null)
    {
        if (slot.FoundWhilePreparing)
        {
            // The index is preparing a resize: no entry can be swung until the epoch moves on (FASTER appendix B).
            return CopyForwardOutcome.NotNow;
        }

        // A copy is written as a session in this phase would write it: at rest and in PREPARE as the version every
        // session runs as; in WAIT-FLUSH as the next version, which recovery of the commit skips (it finds the
        // original, below the final address, instead). Not in IN-PROGRESS or WAIT-PENDING, where an operation of
        // the committing version may still complete on the same key (CPR §6.2.3).
        long stateWord = Volatile.Read(ref _systemState);
        SystemState state = SystemState.FromWord(stateWord);
        if (state.Phase is not (CprPhase.Rest or CprPhase.Prepare or CprPhase.WaitFlush))
        {
            return CopyForwardOutcome.NotNow;
        }

        long version = state.SessionVersion & RecordHeader.VersionMask;

        int size = source.Size;
        if (!TryAllocateCopy(size, epochEntry, reservation, stateWord, out long copyAddress))
        {
            return CopyForwardOutcome.NotNow;
        }

        LogRecord<TKey, TValue> copy = Log.GetRecord<TKey, TValue>(copyAddress);
        if (sourceInMemoryAt >= 0 && sourceInMemoryAt < Log.HeadAddress)
        {
            // The allocation waited for a page turn, refreshing this thread, and the source left memory.
            copy.InitializeUnused(size);
            return CopyForwardOutcome.NotNow;
        }

        copy.CopyBodyFrom(source, size);
        copy.Header = RecordHeader.Create(slot.Address, version, source.Header.Tombstone, source.Header.Expiring);
        if (Volatile.Read(ref _systemState) != stateWord)
        {
            copy.Header.SetInvalid();
            return CopyForwardOutcome.NotNow;
        }

        if (Index.TryUpdateEntry(ref slot, copyAddress))
        {
            return CopyForwardOutcome.Copied;
        }

        copy.Header.SetInvalid();
        return CopyForwardOutcome.NotLive;
    }
}

/// <summary>What offering one record to <c>ConditionalCopyToTail</c> did.</summary>
internal enum CopyForwardOutcome : byte
{
    /// <summary>The record was its key's newest and its copy is now the head of the chain.</summary>
    Copied,

    /// <summary>A newer record of the key exists (or the record is invalid): nothing to keep.</summary>
    NotLive,

    /// <summary>Not possible now: the record left memory, the tail has no free frame, or a commit is between its
    /// IN-PROGRESS and WAIT-FLUSH phases.</summary>
    NotNow,
}

/// <summary>What compacting one in-memory page did.</summary>
internal enum PageCompactionOutcome : byte
{
    /// <summary>Every live record was copied forward.</summary>
    Copied,

    /// <summary>The page's live records fill more than allowed; nothing was copied.</summary>
    MostlyLive,

    /// <summary>Copying stopped part way (see <see cref="CopyForwardOutcome.NotNow"/>).</summary>
    Stopped,

    /// <summary>The page left memory before it could be examined.</summary>
    Evicted,
}

/// <summary>The result of compacting one in-memory page.</summary>
internal readonly record struct PageCompaction(
    long LiveBytes, long CopiedRecords, long CopiedBytes, PageCompactionOutcome Outcome)
{
    public static PageCompaction Evicted => new(0, 0, 0, PageCompactionOutcome.Evicted);
}
