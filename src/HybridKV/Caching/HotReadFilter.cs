using System.Numerics;
using System.Runtime.CompilerServices;

namespace HybridKV.Caching;

/// <summary>
/// Which records read from the device are hot enough to bring back into memory: a key read from the device a second
/// time while its first read is still remembered (a doorkeeper, as TinyLFU admits entries). One bit a key hash; after
/// a quarter of the bits were set the whole filter is forgotten, so a key must be read twice within that many device
/// reads. A key read once (a scan, a uniform workload's cold keys) is not copied; a key read again and again (zipf's
/// head, a hot record evicted by updates elsewhere) is, the second time.
/// </summary>
/// <remarks>
/// Shared by every session without locks: two sessions setting bits of one word at once may lose one (one copy
/// delayed), and a reset racing a mark may keep or drop it; neither changes what any read returns. A bit set by
/// another key of the same hash bits admits a cold record early, which costs one copy.
/// </remarks>
internal sealed class HotReadFilter
{
    /// <summary>The fewest bits a filter has (8 KiB).</summary>
    public const int MinBits = 1 << 16;

    /// <summary>The most bits a filter has (16 MiB).</summary>
    public const int MaxBits = 1 << 27;

    private readonly ulong[] _words;
    private readonly int _shift;
    private readonly int _forgetAfter;
    private int _marked;

    /// <summary>A filter of a bit per 64 bytes of the log's memory (between <see cref="MinBits"/> and
    /// <see cref="MaxBits"/>), so that it remembers about as many keys as a memory of small records holds.</summary>
    public HotReadFilter(long memoryBytes)
    {
        int bits = (int)Math.Clamp(BitOperations.RoundUpToPowerOf2((ulong)Math.Max(1, memoryBytes / 64)),
            (ulong)MinBits, (ulong)MaxBits);
        _words = new ulong[bits / 64];
        _shift = 64 - BitOperations.Log2((uint)bits);
        _forgetAfter = bits / 4;
    }

    /// <summary>
    /// Notes a device read of the key of <paramref name="keyHash"/>: true if the key was read from the device since the
    /// filter last forgot (the record is hot: copy it), false if this is the first time (remembered for next time).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool ReadAgain(long keyHash)
    {
        // Fibonacci hashing: the index uses the low bits and the tag the high ones of the same hash.
        int bit = (int)(((ulong)keyHash * 0x9E3779B97F4A7C15UL) >> _shift);
        ref ulong word = ref _words[bit >> 6];
        ulong mask = 1UL << (bit & 63);
        if ((Volatile.Read(ref word) & mask) != 0)
        {
            return true;
        }

        Interlocked.Or(ref word, mask);
        if (Interlocked.Increment(ref _marked) >= _forgetAfter)
        {
            Volatile.Write(ref _marked, 0);
            Array.Clear(_words);
        }

        return false;
    }
}
