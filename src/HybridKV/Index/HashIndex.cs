using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics;
using HybridKV.Utilities;

namespace HybridKV.Index;

/// <summary>
/// The latch-free hash index of FASTER §3: 2^k cache-line buckets of seven entries plus an overflow pointer, where
/// each (offset, tag) pair has at most one visible entry, pointing at the newest record of its hash chain. The table
/// doubles online (appendix B, <c>HashIndex.Resize.cs</c>).
/// </summary>
internal sealed unsafe partial class HashIndex : IDisposable
{
    // The current table. During a resize it is the old one; it changes only when the resize returns to stable, and is
    // read only after the resize word (which is written after it), so a reader always pairs a word with its table.
    private HashBucket* _buckets;
    private long _mask;
    private long _bucketCount;

    // The ResizeState word: read by every find, written only by a resize.
    private long _resizeState;

    // Overflow buckets linked into the current table: what the automatic growth trigger compares with the bucket count.
    // Approximate while a resize changes tables, which is all a trigger needs.
    private long _overflowLinked;

    private readonly OverflowBucketAllocator _overflow = new();
    private bool _disposed;

    /// <summary>Creates an index of <paramref name="bucketCount"/> buckets, a power of two.</summary>
    public HashIndex(long bucketCount)
    {
        if (bucketCount < 1 || !BitOperations.IsPow2(bucketCount))
        {
            throw new ArgumentOutOfRangeException(nameof(bucketCount), bucketCount, "Must be a power of two.");
        }

        _bucketCount = bucketCount;
        _mask = bucketCount - 1;
        _buckets = AllocateTable(bucketCount);
    }

    /// <summary>The number of primary buckets (2^k) of the current table; it doubles when a resize completes.</summary>
    public long BucketCount => Volatile.Read(ref _bucketCount);

    /// <summary>The number of overflow buckets allocated so far, by any table (including ones free for reuse).</summary>
    public long OverflowBucketCount => _overflow.AllocatedCount;

    /// <summary>The resize status now.</summary>
    public ResizeState ResizeStatus => new(Volatile.Read(ref _resizeState));

    /// <summary>
    /// Finds the visible (non-tentative) entry for the hash's (offset, tag), if there is one (FASTER's find_tag).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryFindEntry(KeyHash hash, out IndexSlot slot)
    {
        long state = Volatile.Read(ref _resizeState);
        // The one branch a resize adds to an operation: predictable, since the index is stable almost always.
        HashBucket* bucket = (state & ResizeState.PhaseMask) == 0
            ? _buckets + hash.Offset(_mask)
            : BucketWhileResizing(hash, state);
        return TryFindIn(bucket, hash.Tag, state, out slot);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryFindIn(HashBucket* bucket, ushort tag, long state, out IndexSlot slot)
    {
        // One masked compare per entry: the tag must match and the tentative bit must be clear.
        long wanted = (long)tag << HashBucketEntry.TagShift;
        while (true)
        {
            long* words = bucket->Words;
            int i = Vector512.IsHardwareAccelerated ? FirstMatch(words, wanted) : 0;
            for (; i < HashBucket.EntryCount; i++)
            {
                long word = Volatile.Read(ref words[i]);
                if ((word & HashBucketEntry.TagAndTentativeMask) == wanted && word != 0)
                {
                    slot = new IndexSlot(ref words[i], new HashBucketEntry(word), state);
                    return true;
                }
            }

            long next = Volatile.Read(ref words[HashBucket.OverflowWordIndex]) & HashBucket.OverflowIdMask;
            if (next == 0)
            {
                slot = default;
                return false;
            }

            bucket = _overflow.GetBucket(next);
        }
    }

    /// <summary>
    /// The first entry of the bucket's line that holds <paramref name="wanted"/>'s tag and is visible, found with one
    /// compare of all eight words instead of a branch per entry (whose exit, at a random entry, the processor mispredicts
    /// on most look-ups), or <see cref="HashBucket.EntryCount"/> if none does. Every word of the aligned line is read
    /// whole, so a match is a word that matched when read; the caller reads it again before using it, and a word that
    /// changed meanwhile sends the caller on through the entries after it.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int FirstMatch(long* words, long wanted)
    {
        Vector512<long> line = Vector512.Load(words);
        Vector512<long> matches = Vector512.Equals(line & Vector512.Create(HashBucketEntry.TagAndTentativeMask),
            Vector512.Create(wanted)) & ~Vector512.Equals(line, Vector512<long>.Zero);
        // The overflow word is not an entry.
        uint found = (uint)matches.ExtractMostSignificantBits() & ((1u << HashBucket.EntryCount) - 1);
        return found == 0 ? HashBucket.EntryCount : BitOperations.TrailingZeroCount(found);
    }

    /// <summary>
    /// Swings the slot from the entry it observed to one pointing at <paramref name="newAddress"/>. On failure the slot
    /// is left as it was and the caller starts over from the index. It fails, without touching the slot, when the
    /// index's resize status moved since the find (the slot's table may have been split and its entry copied; the
    /// caller is still protected, so a status that did not move cannot move to a split before it leaves) or the find
    /// ran while a resize was being prepared (FASTER appendix B).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryUpdateEntry(ref IndexSlot slot, long newAddress)
    {
        if (!ResizeState.AllowsUpdate(slot.ResizeWord, Volatile.Read(ref _resizeState)))
        {
            return false;
        }

        var desired = new HashBucketEntry(slot.Observed.Tag, newAddress, tentative: false);
        if (Interlocked.CompareExchange(ref slot.Word, desired.Word, slot.Observed.Word) != slot.Observed.Word)
        {
            return false;
        }

        slot.Observed = desired;
        return true;
    }

    /// <summary>Empties the slot if it still holds the entry it observed (FASTER §3.2, "Deleting an Entry").</summary>
    public bool TryDeleteEntry(ref IndexSlot slot)
    {
        return ResizeState.AllowsUpdate(slot.ResizeWord, Volatile.Read(ref _resizeState)) &&
               Interlocked.CompareExchange(ref slot.Word, 0, slot.Observed.Word) == slot.Observed.Word;
    }

    /// <summary>Starts loading the bucket a find of <paramref name="hash"/> will read, so that a batch of look-ups (batched
    /// reads, compaction's liveness traces) waits for memory once, not once per look-up. A hint: it never faults, and
    /// does nothing where the processor has no prefetch.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Prefetch(KeyHash hash) => Utilities.CacheLine.Prefetch(PrimaryBucket(hash, Volatile.Read(ref _resizeState)));

    /// <summary>The bucket the hash starts in under <paramref name="state"/>: the rare path of a find.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private HashBucket* PrimaryBucket(KeyHash hash, long state)
    {
        Debug.Assert(!_disposed, "The index is disposed.");
        return (state & ResizeState.PhaseMask) == 0 ? _buckets + hash.Offset(_mask) : BucketWhileResizing(hash, state);
    }

    /// <summary>Visits every visible entry (tests and diagnostics; not safe against concurrent updates).</summary>
    internal void ForEachEntry(Action<long, HashBucketEntry> visit)
    {
        var visitor = new EntryVisitor(visit);
        ForEachEntryWord(ref visitor);
    }

    /// <summary>What <see cref="ForEachEntryWord{TVisitor}"/> calls with each entry word: a struct, bound statically (a
    /// delegate call per word made a count of a 512K-bucket index take 25 ms, once a second on compaction's thread).
    /// </summary>
    private interface IEntryWordVisitor
    {
        void Visit(long offset, ref long word);
    }

    private readonly struct EntryVisitor(Action<long, HashBucketEntry> visit) : IEntryWordVisitor
    {
        public void Visit(long offset, ref long word)
        {
            var entry = new HashBucketEntry(Volatile.Read(ref word));
            if (!entry.IsEmpty)
            {
                visit(offset, entry);
            }
        }
    }

    /// <summary>
    /// Calls <paramref name="visitor"/> with every entry word of the current table, primary buckets and their overflow
    /// chains, and the offset of the primary bucket. The caller keeps resizes out if it must see one table whole.
    /// </summary>
    private void ForEachEntryWord<TVisitor>(ref TVisitor visitor)
        where TVisitor : struct, IEntryWordVisitor
    {
        for (long offset = 0; offset < _bucketCount; offset++)
        {
            HashBucket* bucket = _buckets + offset;
            while (true)
            {
                for (int i = 0; i < HashBucket.EntryCount; i++)
                {
                    visitor.Visit(offset, ref bucket->Words[i]);
                }

                long next = Volatile.Read(ref bucket->Words[HashBucket.OverflowWordIndex]) & HashBucket.OverflowIdMask;
                if (next == 0)
                {
                    break;
                }

                bucket = _overflow.GetBucket(next);
            }
        }
    }

    /// <summary>
    /// The overflow buckets chained to the current table's buckets, and the longest chain of buckets (1 = no
    /// overflow). Tests and diagnostics; not safe against concurrent updates.
    /// </summary>
    internal (long OverflowBuckets, int LongestChain) MeasureChains()
    {
        long overflow = 0;
        int longest = 0;
        for (long offset = 0; offset < _bucketCount; offset++)
        {
            int length = 1;
            long next = _buckets[offset].Words[HashBucket.OverflowWordIndex] & HashBucket.OverflowIdMask;
            while (next != 0)
            {
                length++;
                next = _overflow.GetBucket(next)->Words[HashBucket.OverflowWordIndex] & HashBucket.OverflowIdMask;
            }

            overflow += length - 1;
            longest = Math.Max(longest, length);
        }

        return (overflow, longest);
    }

    private static HashBucket* AllocateTable(long bucketCount) =>
        (HashBucket*)LargeMemory.AllocateZeroed((nuint)bucketCount * HashBucket.Bytes, HashBucket.Bytes);

    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        DisposeResize();
        LargeMemory.Free(_buckets);
        _overflow.Dispose();
    }
}
