using System.Runtime.InteropServices;

namespace HybridKV.Index;

/// <summary>
/// A hash bucket: one 64-byte, 64-byte aligned cache line of seven entries and an overflow word (FASTER §3.1).
/// <code>
///  word 0..6  HashBucketEntry
///  word 7     63           48 47                                     0
///            +---------------+----------------------------------------+
///            | reserved (16) | overflow bucket id (48), 0 = none       |
///            +---------------+----------------------------------------+
/// </code>
/// The reserved bits are kept for the bucket latches of CPR appendix B.
/// </summary>
[StructLayout(LayoutKind.Sequential, Size = Bytes)]
internal unsafe struct HashBucket
{
    public const int Bytes = 64;
    public const int EntryCount = 7;
    public const int OverflowWordIndex = EntryCount;
    public const long OverflowIdMask = (1L << 48) - 1;

    public fixed long Words[8];
}
