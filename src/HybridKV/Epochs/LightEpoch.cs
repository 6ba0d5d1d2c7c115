using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Utilities;

namespace HybridKV.Epochs;

/// <summary>
/// The epoch protection framework of FASTER §2.3–2.4 (and CPR §3): a shared current epoch, a table with one cache line
/// per participant, and a drain list of trigger actions that run exactly once, after the epoch they were bumped at is
/// safe.
/// </summary>
/// <remarks>
/// Participants are sessions, not OS threads: a session owns a row for its lifetime and is protected only for the
/// synchronous stretch of one operation (<see cref="Protect"/> … <see cref="Unprotect"/>), so a session can move
/// between threads across an <c>await</c>. When every row is taken, <see cref="TryAcquireEntry"/> fails and the caller
/// reports a clear error; the table never grows, because growing it would race with the scans that compute the safe
/// epoch.
/// </remarks>
internal sealed partial class LightEpoch : IDisposable
{
    internal const int CacheLineBytes = 64;

    /// <summary>The local epoch of a row whose participant is not inside protected code.</summary>
    internal const long Unprotected = 0;

    private const long FirstEpoch = 1;

    // A managed array, so that a session touching its row after the store was disposed never writes freed memory.
    // Rows are 128 bytes apart: two rows never share a cache line (or an adjacent-line prefetch pair) whatever
    // alignment the array gets.
    private readonly EpochEntry[] _table;
    private readonly int _capacity;

    // The shared current epoch E, alone on its cache line: every Protect reads it.
    private PaddedInt64 _currentEpoch;

    // E_s: the largest epoch known to be safe. Invariant (FASTER §2.3): for every protected row, E_s < E_T <= E.
    private long _safeEpoch;

    // One past the highest row ever claimed; scans stop here instead of walking the whole table.
    private int _highWaterMark;

    private bool _disposed;

    /// <summary>Creates an epoch table with room for <paramref name="capacity"/> participants.</summary>
    public LightEpoch(int capacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 1);
        _capacity = capacity;
        _table = new EpochEntry[capacity];
        _currentEpoch.Value = FirstEpoch;
        _safeEpoch = FirstEpoch - 1;
        _drainList = new DrainItem[DrainListCapacity];
        _hasActionAtOrBelow = HasActionAtOrBelow;
        for (int i = 0; i < _drainList.Length; i++)
        {
            _drainList[i].Epoch = DrainItem.Free;
        }
    }

    /// <summary>The number of rows in the table.</summary>
    public int Capacity => _capacity;

    /// <summary>The shared current epoch E.</summary>
    public long CurrentEpoch => Volatile.Read(ref _currentEpoch.Value);

    /// <summary>The largest epoch that every protected participant has moved past (E_s).</summary>
    public long SafeEpoch => Volatile.Read(ref _safeEpoch);

    /// <summary>Claims a free row for a new participant (FASTER's Acquire, minus the protection itself).</summary>
    /// <returns><see langword="false"/> when every row is taken.</returns>
    public bool TryAcquireEntry(out int entry)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        for (int i = 0; i < _capacity; i++)
        {
            if (Volatile.Read(ref _table[i].Owned) == 0 && Interlocked.CompareExchange(ref _table[i].Owned, 1, 0) == 0)
            {
                _table[i].LocalEpoch = Unprotected;
                RaiseHighWaterMark(i + 1);
                entry = i;
                return true;
            }
        }

        entry = -1;
        return false;
    }

    /// <summary>Gives a row back (FASTER's Release). The participant must not be protected.</summary>
    public void ReleaseEntry(int entry)
    {
        CheckEntry(entry);
        Volatile.Write(ref _table[entry].LocalEpoch, Unprotected);
        Volatile.Write(ref _table[entry].Owned, 0);
        if (HasPendingActions)
        {
            TryDrain();
        }
    }

    /// <summary>
    /// Enters protected code: sets E_T to the current epoch. Until <see cref="Unprotect"/> or <see cref="Refresh"/>,
    /// no action bumped at or after that epoch runs, so memory and offsets observed here stay valid.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Protect(int entry)
    {
        CheckEntry(entry);
        // A plain store, not a fence: a fence per operation would stop consecutive operations from overlapping their
        // cache misses. The store may still sit in this core's store buffer while later loads run ahead of it, so the
        // rare side pays instead: whoever is about to trust a scan of the table first calls
        // FlushProtectionStores (see TryDrain and the store's Dispose).
        Volatile.Write(ref _table[entry].LocalEpoch, CurrentEpoch);
    }

    /// <summary>
    /// Makes every protection store issued so far visible, on every core (an asymmetric fence). After it, a scan sees
    /// every participant that protected itself before the call, and any participant that protects itself later reads
    /// shared state written before the call.
    /// </summary>
    public static void FlushProtectionStores() => Interlocked.MemoryBarrierProcessWide();

    /// <summary>Leaves protected code, first running any trigger actions that became safe.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Unprotect(int entry)
    {
        CheckEntry(entry);
        if (HasPendingActions)
        {
            Refresh(entry);
        }

        Volatile.Write(ref _table[entry].LocalEpoch, Unprotected);

        // An action published between the check above and the store may have found this participant still protected
        // and stayed behind; if no one else is active, nobody would run it. So look again once unprotected: either
        // this load sees the action, or the bumper's second scan (after flushing every core's stores) sees this row
        // unprotected (BumpCurrentEpoch).
        if (HasPendingActions)
        {
            TryDrain();
        }
    }

    /// <summary>The epoch the participant holding <paramref name="entry"/> last protected or refreshed at (or
    /// 0 while unprotected): a change tells it that it was refreshed.</summary>
    public long LocalEpochOf(int entry)
    {
        CheckEntry(entry);
        return Volatile.Read(ref _table[entry].LocalEpoch);
    }

    /// <summary>Whether the participant holding <paramref name="entry"/> is inside protected code.</summary>
    public bool IsProtected(int entry)
    {
        CheckEntry(entry);
        return Volatile.Read(ref _table[entry].LocalEpoch) != Unprotected;
    }

    /// <summary>
    /// Moves a protected participant to the current epoch, recomputes the safe epoch and runs the actions that became
    /// safe (FASTER's Refresh). Everything the participant observed before the call may be invalid after it.
    /// </summary>
    public void Refresh(int entry)
    {
        CheckEntry(entry);
        Debug.Assert(IsProtected(entry), "Refresh is for protected participants.");
        // Moving forward needs no fence: it only lets actions run later than they could have.
        Volatile.Write(ref _table[entry].LocalEpoch, CurrentEpoch);
        if (HasPendingActions)
        {
            TryDrain();
        }
    }

    /// <summary>Whether any protected participant is in the table (used to quiesce before disposal).</summary>
    public bool AnyProtected()
    {
        int limit = Volatile.Read(ref _highWaterMark);
        for (int i = 0; i < limit; i++)
        {
            if (Volatile.Read(ref _table[i].LocalEpoch) != Unprotected)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// One less than the oldest local epoch of any protected participant that this scan sees, or E - 1 when it sees
    /// none. Without a preceding <see cref="FlushProtectionStores"/> this is only a candidate for E_s.
    /// </summary>
    private long ScanForSafeEpoch()
    {
        long oldest = CurrentEpoch;
        int limit = Volatile.Read(ref _highWaterMark);
        for (int i = 0; i < limit; i++)
        {
            long local = Volatile.Read(ref _table[i].LocalEpoch);
            if (local != Unprotected && local < oldest)
            {
                oldest = local;
            }
        }

        return oldest - 1;
    }

    /// <summary>
    /// Recomputes E_s. A scan alone could miss a protection store still in flight, so before E_s moves on the
    /// candidate is confirmed by a second scan after <see cref="FlushProtectionStores"/>. That costs a few
    /// microseconds, paid only when an action is actually waiting for the new E_s.
    /// </summary>
    private long ComputeNewSafeEpoch(Func<long, bool> isWorthConfirming)
    {
        long known = Volatile.Read(ref _safeEpoch);
        long candidate = ScanForSafeEpoch();
        if (candidate <= known || !isWorthConfirming(candidate))
        {
            return known;
        }

        FlushProtectionStores();
        return Monotonic.Raise(ref _safeEpoch, ScanForSafeEpoch());
    }

    private void RaiseHighWaterMark(int candidate)
    {
        int seen = Volatile.Read(ref _highWaterMark);
        while (candidate > seen)
        {
            int observed = Interlocked.CompareExchange(ref _highWaterMark, candidate, seen);
            if (observed == seen)
            {
                return;
            }

            seen = observed;
        }
    }

    [Conditional("DEBUG")]
    private void CheckEntry(int entry)
    {
        Debug.Assert((uint)entry < (uint)_capacity, "Epoch entry out of range.");
        Debug.Assert(_table[entry].Owned == 1, "Epoch entry is not owned.");
    }

    /// <summary>Runs every action still waiting (no participant may be protected any more) and frees the table.</summary>
    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        Debug.Assert(!AnyProtected(), "Disposing an epoch table while a participant is protected.");
        TryDrain();
        _disposed = true;
    }

    [StructLayout(LayoutKind.Explicit, Size = 2 * CacheLineBytes)]
    private struct PaddedInt64
    {
        [FieldOffset(CacheLineBytes)]
        public long Value;
    }
}
