namespace HybridKV.Log;

/// <summary>
/// Writer backpressure for log compaction: while a compaction runs and the log is larger than the limit it set, page
/// turns by anyone but the compaction itself are refused as if no frame were free (<see cref="AllocationResult.RetryLater"/>:
/// operations wait for <see cref="SpaceSignal"/> outside protection and try again). Bounded: the hold ends when the
/// compaction ends (<see cref="ReleaseWriters"/>) or at its deadline, whichever comes first, so a compaction that
/// frees nothing slows writers for at most that long and never stops them.
/// </summary>
internal sealed partial class HybridLog
{
    // The log size (tail minus begin) above which page turns wait; long.MaxValue while no hold is set.
    private long _holdAbove = long.MaxValue;

    // Environment.TickCount64 after which the hold no longer applies.
    private long _holdDeadline;

    // The epoch row whose page turns are never held (the compaction's: its copies are what frees room).
    private int _holdExemptEntry = Epochs.LightEpoch.NoEntry;

    // Cold: page turns refused by a hold.
    private long _pageTurnsHeld;

    /// <summary>How many page turns a compaction's hold refused (each makes its writer wait and try again).</summary>
    internal long PageTurnsHeld => Interlocked.Read(ref _pageTurnsHeld);

    /// <summary>
    /// Holds page turns while the log is larger than <paramref name="logBytes"/>, until <see cref="ReleaseWriters"/>
    /// or for at most <paramref name="maxWait"/>; turns by <paramref name="exemptEntry"/> always go on.
    /// </summary>
    public void HoldWritersAbove(long logBytes, int exemptEntry, TimeSpan maxWait)
    {
        Volatile.Write(ref _holdExemptEntry, exemptEntry);
        Volatile.Write(ref _holdDeadline, Environment.TickCount64 + (long)maxWait.TotalMilliseconds);
        Volatile.Write(ref _holdAbove, logBytes);
    }

    /// <summary>Ends a hold and wakes the writers it made wait.</summary>
    public void ReleaseWriters()
    {
        Volatile.Write(ref _holdAbove, long.MaxValue);
        _spaceSignal.Signal();
    }

    /// <summary>Whether a hold refuses this page turn (called only when a page is turned, never per record).</summary>
    private bool IsHeld(int callerEntry)
    {
        long above = Volatile.Read(ref _holdAbove);
        if (above == long.MaxValue || callerEntry == Volatile.Read(ref _holdExemptEntry) ||
            TailAddress - BeginAddress <= above)
        {
            return false;
        }

        if (Environment.TickCount64 >= Volatile.Read(ref _holdDeadline))
        {
            return false;
        }

        Interlocked.Increment(ref _pageTurnsHeld);
        return true;
    }
}
