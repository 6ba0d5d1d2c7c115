using System.Runtime.CompilerServices;

namespace HybridKV.Index;

/// <summary>
/// A key's 64-bit hash split the way FASTER §3.1 uses it: the low bits choose the bucket (the offset), the top 15
/// bits are the tag that raises the index's resolution from k to k + 15 bits.
/// </summary>
internal readonly struct KeyHash
{
    public readonly long Value;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public KeyHash(long value) => Value = value;

    /// <summary>The 15-bit tag, taken from bits 48–62 so it never overlaps the offset bits of a real index.</summary>
    public ushort Tag
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (ushort)((Value >> HashBucketEntry.TagShift) & HashBucketEntry.TagMask);
    }

    /// <summary>The bucket this hash falls into in an index of <c>mask + 1</c> buckets.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public long Offset(long mask) => Value & mask;
}
