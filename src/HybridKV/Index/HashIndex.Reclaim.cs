using System.Diagnostics;

namespace HybridKV.Index;

/// <summary>Reclaiming entries whose chains lie wholly below the log's begin address (after compaction).</summary>
internal sealed unsafe partial class HashIndex
{
    /// <summary>
    /// Empties every entry that points below <paramref name="beginAddress"/>: no record of its chain is part of the log
    /// any more, so each of its keys reads as absent with or without it, and the slot is free for another tag. Each
    /// entry is removed by a CAS on the value seen (FASTER §3.2, "Deleting an Entry"), so an entry that an operation
    /// swings to a new record meanwhile stays; an operation that found the old value fails its CAS and finds no entry.
    /// Entries of a two-phase insert still in progress (<see cref="TentativeRecordAddress"/>) are left alone. The caller
    /// holds the index's structure (<see cref="LockStructureAsync"/>): no resize swaps the table under the walk.
    /// </summary>
    /// <returns>The number of entries emptied.</returns>
    public long ReclaimEntriesBelow(long beginAddress)
    {
        Debug.Assert(_structureLock.CurrentCount == 0, "The caller holds the index's structure.");
        var reclaimer = new Reclaimer(beginAddress);
        ForEachEntryWord(ref reclaimer);
        return reclaimer.Reclaimed;
    }

    private struct Reclaimer(long beginAddress) : IEntryWordVisitor
    {
        public long Reclaimed;

        public void Visit(long offset, ref long word)
        {
            var entry = new HashBucketEntry(Volatile.Read(ref word));
            if (!entry.IsEmpty && !entry.Tentative && entry.Address != TentativeRecordAddress &&
                entry.Address < beginAddress && Interlocked.CompareExchange(ref word, 0, entry.Word) == entry.Word)
            {
                Reclaimed++;
            }
        }
    }

    /// <summary>
    /// The number of entries that lead into the log at or above <paramref name="beginAddress"/>: about the number of
    /// keys (fewer when keys share a tag, more while deleted keys' entries wait for compaction). Null while a resize or
    /// an index checkpoint holds the structure (the count would walk a table being replaced).
    /// </summary>
    public long? TryCountEntriesFrom(long beginAddress)
    {
        if (!_structureLock.Wait(0))
        {
            return null;
        }

        try
        {
            return CountEntriesFrom(beginAddress);
        }
        finally
        {
            _structureLock.Release();
        }
    }

    private long CountEntriesFrom(long beginAddress)
    {
        var counter = new Counter(beginAddress);
        ForEachEntryWord(ref counter);
        return counter.Count;
    }

    private struct Counter(long beginAddress) : IEntryWordVisitor
    {
        public long Count;

        public void Visit(long offset, ref long word)
        {
            var entry = new HashBucketEntry(Volatile.Read(ref word));
            if (!entry.IsEmpty && entry.Address >= beginAddress)
            {
                Count++;
            }
        }
    }
}
