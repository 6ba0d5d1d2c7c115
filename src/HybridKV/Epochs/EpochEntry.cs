using System.Runtime.InteropServices;

namespace HybridKV.Epochs;

/// <summary>
/// One row of the epoch table: a padded cache line owned by one protected participant (FASTER §2.3, "one cache-line per
/// thread"), so that refreshing one participant never invalidates another's line.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = 2 * LightEpoch.CacheLineBytes)]
internal struct EpochEntry
{
    /// <summary>The epoch this participant is protected in, or <see cref="LightEpoch.Unprotected"/>.</summary>
    [FieldOffset(0)]
    public long LocalEpoch;

    /// <summary>1 while a participant holds this row, 0 while it is free; claimed by compare-and-swap.</summary>
    [FieldOffset(8)]
    public int Owned;
}
