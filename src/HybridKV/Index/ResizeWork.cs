using System.Diagnostics;

namespace HybridKV.Index;

/// <summary>
/// One doubling of the index in progress (FASTER appendix B): the old table, the new one of twice the buckets, and the
/// split status of each chunk of old buckets. Created before the index leaves the stable phase and kept until every
/// thread that may have seen it has left, so a find that read a resizing status always finds this object behind it.
/// </summary>
internal sealed unsafe class ResizeWork
{
    public const int Unsplit = 0;
    public const int Splitting = 1;
    public const int Split = 2;

    // Chunks are the unit an operation splits before it uses the new table: small enough that the operation that
    // splits one stalls briefly, few enough that the status array stays small (at most 2^20 chunks).
    private const int MinChunkBits = 6;
    private const int MaxChunkCountBits = 20;

    public readonly HashBucket* Old;
    public readonly long OldMask;
    public readonly HashBucket* New;
    public readonly long NewMask;
    public readonly int ChunkBits;

    /// <summary><see cref="Unsplit"/>, <see cref="Splitting"/> or <see cref="Split"/> per chunk.</summary>
    public readonly int[] Chunks;

    /// <summary>Chunks split so far.</summary>
    public int ChunksSplit;

    /// <summary>Overflow buckets linked into the new table (by splits and by inserts while resizing).</summary>
    public long NewOverflowLinked;

    /// <summary>The longest a single chunk split took, in <see cref="Stopwatch"/> ticks: the longest an operation that
    /// splits its own chunk stalls.</summary>
    public long LongestSplitTicks;

    /// <summary>Chunks split by operations (the rest were split by the background task).</summary>
    public int SplitByOperations;

    public ResizeWork(HashBucket* old, long oldCount, HashBucket* @new)
    {
        Debug.Assert(oldCount >= 1 && (oldCount & (oldCount - 1)) == 0, "Tables are powers of two.");
        Old = old;
        OldMask = oldCount - 1;
        New = @new;
        NewMask = (oldCount * 2) - 1;
        int sizeBits = System.Numerics.BitOperations.Log2((ulong)oldCount);
        ChunkBits = Math.Min(sizeBits, Math.Max(MinChunkBits, sizeBits - MaxChunkCountBits));
        Chunks = new int[oldCount >> ChunkBits];
    }

    public long OldCount => OldMask + 1;

    public long NewCount => NewMask + 1;

    public long BucketsPerChunk => 1L << ChunkBits;
}
