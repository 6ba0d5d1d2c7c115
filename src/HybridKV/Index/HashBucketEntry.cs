using System.Runtime.CompilerServices;

namespace HybridKV.Index;

/// <summary>
/// One 8-byte slot of a hash bucket (FASTER §3.1, Fig. 2). The whole word is read and swapped atomically.
/// <code>
///  63 62            48 47                                              0
/// +--+----------------+-------------------------------------------------+
/// |T |   tag (15)     |               log address (48)                  |
/// +--+----------------+-------------------------------------------------+
///  T = tentative: the entry is mid-insert and invisible to finds (§3.2). A zero word is an empty slot.
/// </code>
/// </summary>
internal readonly struct HashBucketEntry : IEquatable<HashBucketEntry>
{
    public const int AddressBits = 48;
    public const long AddressMask = (1L << AddressBits) - 1;
    public const int TagBits = 15;
    public const int TagShift = AddressBits;
    public const long TagMask = (1L << TagBits) - 1;
    public const int TentativeShift = TagShift + TagBits;
    public const long TentativeBit = 1L << TentativeShift;
    public const long TagAndTentativeMask = (TagMask << TagShift) | TentativeBit;

    public readonly long Word;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public HashBucketEntry(long word) => Word = word;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public HashBucketEntry(ushort tag, long address, bool tentative)
    {
        Word = (address & AddressMask) | ((long)(tag & TagMask) << TagShift) | (tentative ? TentativeBit : 0);
    }

    public bool IsEmpty => Word == 0;

    public long Address
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Word & AddressMask;
    }

    public ushort Tag
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (ushort)((Word >> TagShift) & TagMask);
    }

    public bool Tentative
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Word & TentativeBit) != 0;
    }

    public bool Equals(HashBucketEntry other) => Word == other.Word;

    public override bool Equals(object? obj) => obj is HashBucketEntry other && Equals(other);

    public override int GetHashCode() => Word.GetHashCode();

    public override string ToString() => $"tag={Tag} address={Address}{(Tentative ? " tentative" : "")}";
}
