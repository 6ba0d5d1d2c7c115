using System.Runtime.CompilerServices;

namespace HybridKV.Index;

/// <summary>The two-phase latch-free insert of FASTER §3.2 ("Inserting an Entry", Fig. 3b).</summary>
internal sealed unsafe partial class HashIndex
{
    /// <summary>
    /// An address below every valid log address, given to a freshly inserted entry until its first record is linked:
    /// finds see the entry, and trace it to "no record", so the record's own CAS decides who creates it.
    /// </summary>
    public const long TentativeRecordAddress = 1;

    /// <summary>
    /// Returns the visible entry for the hash's (offset, tag), inserting one that points at
    /// <see cref="TentativeRecordAddress"/> if there is none (FASTER's find_or_create_tag).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public IndexSlot FindOrCreateEntry(KeyHash hash)
    {
        if (TryFindEntry(hash, out IndexSlot slot))
        {
            return slot;
        }

        return CreateEntry(hash);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private IndexSlot CreateEntry(KeyHash hash)
    {
        ushort tag = hash.Tag;
        var tentative = new HashBucketEntry(tag, TentativeRecordAddress, tentative: true);
        var spinner = new SpinWait();
        while (true)
        {
            // One resize word for the whole attempt: the slot returned carries it, so a table that a resize moved on
            // from meanwhile refuses the slot's swap (TryUpdateEntry).
            long state = Volatile.Read(ref _resizeState);
            HashBucket* primary = PrimaryBucket(hash, state);
            if (TryFindIn(primary, tag, state, out IndexSlot existing))
            {
                return existing;
            }

            // Phase 1: claim the first empty slot of the chain, invisibly.
            ref long free = ref FindOrAddEmptySlot(primary, state);
            if (Interlocked.CompareExchange(ref free, tentative.Word, 0) != 0)
            {
                continue;
            }

            // Phase 2: if anyone else holds this tag, tentative or not, back off; otherwise make ours visible. Of two
            // racing inserts, the later CAS re-scans after the earlier one landed, so they cannot both finalize.
            if (HasOtherEntryWithTag(primary, tag, ref free))
            {
                Volatile.Write(ref free, 0);
                spinner.SpinOnce(sleep1Threshold: -1);
                continue;
            }

            var visible = new HashBucketEntry(tag, TentativeRecordAddress, tentative: false);
            Volatile.Write(ref free, visible.Word);
            return new IndexSlot(ref free, visible, state);
        }
    }

    private ref long FindOrAddEmptySlot(HashBucket* bucket, long state)
    {
        while (true)
        {
            long* words = bucket->Words;
            for (int i = 0; i < HashBucket.EntryCount; i++)
            {
                if (Volatile.Read(ref words[i]) == 0)
                {
                    return ref words[i];
                }
            }

            ref long overflowWord = ref words[HashBucket.OverflowWordIndex];
            long overflow = Volatile.Read(ref overflowWord);
            long next = overflow & HashBucket.OverflowIdMask;
            if (next == 0)
            {
                long fresh = _overflow.Allocate();
                long desired = (overflow & ~HashBucket.OverflowIdMask) | fresh;
                long observed = Interlocked.CompareExchange(ref overflowWord, desired, overflow);
                if (observed == overflow)
                {
                    next = fresh;
                    OnOverflowLinked(state);
                }
                else
                {
                    _overflow.Return(fresh);
                    continue;
                }
            }

            bucket = _overflow.GetBucket(next);
        }
    }

    private bool HasOtherEntryWithTag(HashBucket* bucket, ushort tag, ref long mine)
    {
        while (true)
        {
            long* words = bucket->Words;
            for (int i = 0; i < HashBucket.EntryCount; i++)
            {
                if (Unsafe.AreSame(ref words[i], ref mine))
                {
                    continue;
                }

                var entry = new HashBucketEntry(Volatile.Read(ref words[i]));
                if (!entry.IsEmpty && entry.Tag == tag)
                {
                    return true;
                }
            }

            long next = Volatile.Read(ref words[HashBucket.OverflowWordIndex]) & HashBucket.OverflowIdMask;
            if (next == 0)
            {
                return false;
            }

            bucket = _overflow.GetBucket(next);
        }
    }
}
