using System.Diagnostics;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Utilities;

namespace HybridKV.Index;

/// <summary>
/// The latch-free hash index of FASTER §3: 2^k cache-line buckets of seven entries plus an overflow pointer, where
/// each (offset, tag) pair has at most one visible entry, pointing at the newest record of its hash chain.
/// </summary>
internal sealed unsafe partial class HashIndex : IDisposable
{
    private readonly HashBucket* _buckets;
    private readonly long _mask;
    private readonly OverflowBucketAllocator _overflow = new();
    private bool _disposed;

    /// <summary>Creates an index of <paramref name="bucketCount"/> buckets, a power of two.</summary>
    public HashIndex(long bucketCount)
    {
        if (bucketCount < 1 || !BitOperations.IsPow2(bucketCount))
        {
            throw new ArgumentOutOfRangeException(nameof(bucketCount), bucketCount, "Must be a power of two.");
        }

        BucketCount = bucketCount;
        _mask = bucketCount - 1;
        nuint bytes = (nuint)bucketCount * HashBucket.Bytes;
        _buckets = (HashBucket*)LargeMemory.AllocateZeroed(bytes, HashBucket.Bytes);
    }

    /// <summary>The number of primary buckets (2^k).</summary>
    public long BucketCount { get; }

    /// <summary>The number of overflow buckets allocated so far.</summary>
    public long OverflowBucketCount => _overflow.AllocatedCount;

    /// <summary>
    /// Finds the visible (non-tentative) entry for the hash's (offset, tag), if there is one (FASTER's find_tag).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryFindEntry(KeyHash hash, out IndexSlot slot)
    {
        HashBucket* bucket = PrimaryBucket(hash);
        // One masked compare per entry: the tag must match and the tentative bit must be clear.
        long wanted = (long)hash.Tag << HashBucketEntry.TagShift;
        while (true)
        {
            long* words = bucket->Words;
            for (int i = 0; i < HashBucket.EntryCount; i++)
            {
                long word = Volatile.Read(ref words[i]);
                if ((word & HashBucketEntry.TagAndTentativeMask) == wanted && word != 0)
                {
                    slot = new IndexSlot(ref words[i], new HashBucketEntry(word));
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
    /// Swings the slot from the entry it observed to one pointing at <paramref name="newAddress"/>. On failure the slot
    /// is left as it was and the caller starts over from the index.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool TryUpdateEntry(ref IndexSlot slot, long newAddress)
    {
        var desired = new HashBucketEntry(slot.Observed.Tag, newAddress, tentative: false);
        if (Interlocked.CompareExchange(ref slot.Word, desired.Word, slot.Observed.Word) != slot.Observed.Word)
        {
            return false;
        }

        slot.Observed = desired;
        return true;
    }

    /// <summary>Empties the slot if it still holds the entry it observed (FASTER §3.2, "Deleting an Entry").</summary>
    public static bool TryDeleteEntry(ref IndexSlot slot)
    {
        return Interlocked.CompareExchange(ref slot.Word, 0, slot.Observed.Word) == slot.Observed.Word;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private HashBucket* PrimaryBucket(KeyHash hash)
    {
        Debug.Assert(!_disposed, "The index is disposed.");
        return _buckets + hash.Offset(_mask);
    }

    /// <summary>Visits every visible entry (tests and diagnostics; not safe against concurrent updates).</summary>
    internal void ForEachEntry(Action<long, HashBucketEntry> visit)
    {
        for (long offset = 0; offset < BucketCount; offset++)
        {
            HashBucket* bucket = _buckets + offset;
            while (true)
            {
                for (int i = 0; i < HashBucket.EntryCount; i++)
                {
                    var entry = new HashBucketEntry(Volatile.Read(ref bucket->Words[i]));
                    if (!entry.IsEmpty)
                    {
                        visit(offset, entry);
                    }
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

    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        LargeMemory.Free(_buckets);
        _overflow.Dispose();
    }
}
