using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>
/// The 8-byte header in front of every record (FASTER §4, Fig. 2; CPR §6 for the version).
/// <code>
///  63  62  61  60  59        48 47                                        0
/// +---+---+---+---+------------+-------------------------------------------+
/// | I | T | S | E |version (12)|        previous address (48)              |
/// +---+---+---+---+------------+-------------------------------------------+
///  I = invalid: the record lost its index CAS and is not part of any chain.
///  T = tombstone: the key is deleted as of this record.
///  S = sealed: a variable-length value outgrew the record, which is not updated in place any more (set under the
///      value lock, so no in-place change can follow it); updates copy it to the tail.
///  E = expiring: the record ends with an 8-byte expiry time (fixed when the record is written, never changed in
///      place, so that a record once expired stays expired whatever runs concurrently).
/// </code>
/// Versions start at 1, so a written header is never zero and a zero word marks log space holding no record.
/// </summary>
internal struct RecordHeader
{
    public const int VersionBits = 12;
    public const int VersionShift = LogAddress.Bits;
    public const long VersionMask = (1L << VersionBits) - 1;
    public const int ExpiringShift = VersionShift + VersionBits;
    public const long ExpiringBit = 1L << ExpiringShift;
    public const int SealedShift = ExpiringShift + 1;
    public const long SealedBit = 1L << SealedShift;
    public const int TombstoneShift = SealedShift + 1;
    public const long TombstoneBit = 1L << TombstoneShift;
    public const int InvalidShift = TombstoneShift + 1;
    public const long InvalidBit = 1L << InvalidShift;

    public long Word;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static RecordHeader Create(long previousAddress, long version, bool tombstone, bool expiring = false) => new()
    {
        Word = (previousAddress & LogAddress.MaxAddress)
               | ((version & VersionMask) << VersionShift)
               | (tombstone ? TombstoneBit : 0)
               | (expiring ? ExpiringBit : 0),
    };

    public readonly long PreviousAddress
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Word & LogAddress.MaxAddress;
    }

    public readonly long Version => (Word >> VersionShift) & VersionMask;

    public readonly bool IsNull => Word == 0;

    public readonly bool Invalid
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Word & InvalidBit) != 0;
    }

    public readonly bool Tombstone
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Word & TombstoneBit) != 0;
    }

    /// <summary>Whether the record carries an expiry time (it then ends with an 8-byte expiry word).</summary>
    public readonly bool Expiring
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Word & ExpiringBit) != 0;
    }

    public readonly bool Sealed
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Word & SealedBit) != 0;
    }

    /// <summary>Stops in-place updates of the record (a value outgrew it). Atomic against other bit flips.</summary>
    public void Seal() => Interlocked.Or(ref Word, SealedBit);

    /// <summary>Marks the record as not part of any chain (its index CAS failed). Atomic against other bit flips.</summary>
    public void SetInvalid() => Interlocked.Or(ref Word, InvalidBit);

    /// <summary>Deletes the key in place (mutable region only). Atomic against other bit flips.</summary>
    public void SetTombstone() => Interlocked.Or(ref Word, TombstoneBit);
}
