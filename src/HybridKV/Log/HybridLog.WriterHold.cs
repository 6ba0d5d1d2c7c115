namespace HybridKV.Log;

/// <summary>
/// Writer backpressure for log compaction: while a compaction runs and the log is larger than the limit it set, page
/// turns by anyone but the compaction itself are refused as if no frame were free (<see cref="AllocationResult.RetryLater"/>:
/// operations wait for <see cref="SpaceSignal"/> outside protection and try again). Bounded: the hold ends when the
/// compaction ends (<see cref="ReleaseWriters"/>), and no page turn waits longer than the hold's longest wait (the
/// first refused turn of a page starts its clock; the page then opens whatever the log's size), so a compaction that
/// frees nothing slows writers to a page per wait and never stops them.
/// </summary>
internal sealed partial class HybridLog
{
    // The log size (tail minus begin) above which page turns wait; long.MaxValue while no hold applies.
    private long _holdAbove = long.MaxValue;

    // The hold's limit while it is set (paused or not); long.MaxValue with none.
    private long _holdLimit = long.MaxValue;

    // The longest a page turn waits, in milliseconds.
    private long _holdMaxWait;

    // Environment.TickCount64 when the page being turned was first refused (0: none refused yet).
    private long _heldSince;

    // The epoch row whose page turns are never held (the compaction's: its copies are what frees room).
    private int _holdExemptEntry = Epochs.LightEpoch.NoEntry;

    // Cold: page turns refused by a hold.
    private long _pageTurnsHeld;

    /// <summary>How many page turns a compaction's hold refused (each makes its writer wait and try again).</summary>
    internal long PageTurnsHeld => Interlocked.Read(ref _pageTurnsHeld);

    /// <summary>The log size the hold set by <see cref="HoldWritersAbove"/> limits writers to (long.MaxValue with
    /// none), before any allowance for copies.</summary>
    internal long HoldLimit => Volatile.Read(ref _holdLimit);

    /// <summary>
    /// Holds page turns while the log is larger than <paramref name="logBytes"/>, until <see cref="ReleaseWriters"/>,
    /// each for at most <paramref name="maxWait"/>; turns by <paramref name="exemptEntry"/> always go on.
    /// </summary>
    public void HoldWritersAbove(long logBytes, int exemptEntry, TimeSpan maxWait)
    {
        Volatile.Write(ref _holdExemptEntry, exemptEntry);
        Volatile.Write(ref _holdMaxWait, (long)maxWait.TotalMilliseconds);
        Volatile.Write(ref _holdLimit, logBytes);
        Volatile.Write(ref _holdAbove, logBytes);
    }

    /// <summary>
    /// Lets writers add as much as the compaction is about to copy, <paramref name="copyBytes"/>, over the hold's limit
    /// until <see cref="ResumeHold"/>: the pages its copies open serve the held writers anyway (a page turn is held,
    /// an allocation in an open page is not). A hold lifted altogether while copies were made let writers run for as
    /// long as copying took, and the log passed 3x its live data.
    /// </summary>
    public void PauseHold(long copyBytes)
    {
        long limit = Volatile.Read(ref _holdLimit);
        Volatile.Write(ref _holdAbove, limit == long.MaxValue ? long.MaxValue : limit + copyBytes);
        _spaceSignal.Signal();
    }

    /// <summary>Holds writers at the limit again after <see cref="PauseHold"/> (nothing if the hold was released).</summary>
    public void ResumeHold() => Volatile.Write(ref _holdAbove, Volatile.Read(ref _holdLimit));

    /// <summary>Ends a hold and wakes the writers it made wait.</summary>
    public void ReleaseWriters()
    {
        Volatile.Write(ref _holdLimit, long.MaxValue);
        Volatile.Write(ref _holdAbove, long.MaxValue);
        _spaceSignal.Signal();
    }

    /// <summary>
    /// Whether a hold refuses the turn that opens the page ending at <paramref name="pageEnd"/> (called only when a page
    /// is turned, never per record). The page counts as full: a limit checked against the tail alone let the log pass
    /// it by a page.
    /// </summary>
    private bool IsHeld(long pageEnd, int callerEntry)
    {
        long above = Volatile.Read(ref _holdAbove);
        if (above == long.MaxValue || callerEntry == Volatile.Read(ref _holdExemptEntry) ||
            pageEnd - BeginAddress <= above)
        {
            return false;
        }

        long now = Environment.TickCount64;
        long since = Volatile.Read(ref _heldSince);
        if (since == 0)
        {
            Interlocked.CompareExchange(ref _heldSince, now, 0);
        }
        else if (now - since >= Volatile.Read(ref _holdMaxWait))
        {
            return false;
        }

        Interlocked.Increment(ref _pageTurnsHeld);
        return true;
    }

    /// <summary>A page opened: the next refused turn starts a new wait.</summary>
    private void PageOpened()
    {
        if (Volatile.Read(ref _heldSince) != 0)
        {
            Volatile.Write(ref _heldSince, 0);
        }
    }
}
