using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>
/// One operation's view of the HybridLog offsets (FASTER §6.2, "thread-local view", Fig. 7), read once under epoch
/// protection so that every region decision of that operation is made against the same markers.
/// </summary>
internal readonly struct LogView
{
    public readonly long BeginAddress;
    public readonly long HeadAddress;
    public readonly long SafeReadOnlyAddress;
    public readonly long ReadOnlyAddress;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogView(long begin, long head, long safeReadOnly, long readOnly)
    {
        BeginAddress = begin;
        HeadAddress = head;
        SafeReadOnlyAddress = safeReadOnly;
        ReadOnlyAddress = readOnly;
    }

    /// <summary>The region <paramref name="address"/> lies in, for this view.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogRegion Classify(long address)
    {
        if (address >= ReadOnlyAddress)
        {
            return LogRegion.Mutable;
        }

        if (address >= SafeReadOnlyAddress)
        {
            return LogRegion.Fuzzy;
        }

        if (address >= HeadAddress)
        {
            return LogRegion.SafeReadOnly;
        }

        return address >= BeginAddress ? LogRegion.OnStorage : LogRegion.None;
    }
}
