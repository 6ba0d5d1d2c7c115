using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Epochs;

namespace HybridKV.Log;

/// <summary>Tail allocation with the page-overflow protocol of FASTER Algorithm 1.</summary>
internal sealed partial class HybridLog
{
    // The tail as one word, page in the high half and offset in the low half, so that one fetch-and-add both reserves
    // space and tells the caller whether it overflowed the page. Alone on its cache line: every allocation writes it.
    private PaddedTail _tail;

    /// <summary>
    /// Reserves <paramref name="size"/> bytes at the tail. When the next page has no free frame the tail is left
    /// consistent and the result says whether waiting can help (<see cref="AllocationResult.RetryLater"/>) or not.
    /// </summary>
    /// <param name="size">A multiple of 8, at most the page size.</param>
    /// <param name="callerEntry">
    /// The caller's epoch row. The caller may be refreshed while it waits for a page turn, so it must not rely on any
    /// record it found before the call staying in memory unless it checks the head address again.
    /// </param>
    /// <param name="address">The reserved logical address.</param>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public AllocationResult TryAllocate(int size, int callerEntry, out long address)
    {
        Debug.Assert(size > 0 && size <= _pageSize && (size & 7) == 0, "Record sizes are 8-byte multiples within a page.");
        long word = Interlocked.Add(ref _tail.Word, size);
        int end = (int)(uint)word;
        if (end <= _pageSize)
        {
            address = ((word >> 32) << _pageSizeBits) | (uint)(end - size);
            return AllocationResult.Success;
        }

        return TryAllocateSlow(size, callerEntry, word, out address);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private AllocationResult TryAllocateSlow(int size, int callerEntry, long word, out long address)
    {
        var spinner = new SpinWait();
        while (true)
        {
            long page = word >> 32;
            int end = (int)(uint)word;
            if (end <= _pageSize)
            {
                address = (page << _pageSizeBits) | (uint)(end - size);
                return AllocationResult.Success;
            }

            int start = end - size;
            if (start <= _pageSize)
            {
                // This reservation is the one that crossed the page boundary, so this thread turns the page; every
                // later reservation on this page also overflowed and waits for the turn (Alg. 1, lines 5–16).
                AllocationResult opened;
                try
                {
                    opened = TryOpenPage(page + 1, callerEntry);
                }
                catch
                {
                    // Out of native memory, say: the waiters must not wait for a turn that will never come.
                    Volatile.Write(ref _tail.Word, TailWord(page, _pageSize));
                    throw;
                }

                if (opened != AllocationResult.Success)
                {
                    // Nothing at or after 'start' was handed out. The tail goes back to the page's end, not to 'start':
                    // TailAddress already read as the page's end while the turn was tried (a fold-over may have taken
                    // it as its final address), and must never go backwards; the rest of the page stays empty, as it
                    // does when a turn succeeds. The waiters see the offset back inside the page, retry, and get the
                    // same answer instead of waiting forever.
                    Volatile.Write(ref _tail.Word, TailWord(page, _pageSize));
                    address = LogAddress.Invalid;
                    return opened;
                }

                Interlocked.Exchange(ref _tail.Word, TailWord(page + 1, size));
                address = (page + 1) << _pageSizeBits;
                return AllocationResult.Success;
            }

            // Another thread is turning the page (Alg. 1, line 18). Waiting protected in an old epoch would hold back
            // the trigger actions the turning thread may itself be waiting to publish, so move forward while waiting.
            while (true)
            {
                long current = Volatile.Read(ref _tail.Word);
                if ((current >> 32) != page || (int)(uint)current <= _pageSize)
                {
                    break;
                }

                if (callerEntry != LightEpoch.NoEntry)
                {
                    _epoch.Refresh(callerEntry);
                }

                spinner.SpinOnce();
            }

            word = Interlocked.Add(ref _tail.Word, size);
        }
    }

    // Cold: counted only when a page turn finds no free frame (tests tell a blocked writer from a spinning one by it).
    private long _pageTurnsRefused;

    /// <summary>How many times a page turn found no free frame and its writer had to wait.</summary>
    internal long PageTurnsRefused => Interlocked.Read(ref _pageTurnsRefused);

    /// <summary>
    /// Prepares the frame for <paramref name="page"/> and moves the read-only offset (and, when it lags, the head) to
    /// keep their distance from the tail (Alg. 1, buffer_maintenance).
    /// </summary>
    private AllocationResult TryOpenPage(long page, int callerEntry)
    {
        if (((page + 1) << _pageSizeBits) > AddressLimit)
        {
            return AllocationResult.AddressSpaceExhausted;
        }

        // The frame's previous page must be below the safe head: every thread has stopped reading it from memory.
        long previousPage = page - _frames.Length;
        if (previousPage >= 0 && ((previousPage + 1) << _pageSizeBits) > SafeHeadAddress)
        {
            if (_device is null)
            {
                return AllocationResult.Full;
            }

            ThrowIfFlushFailed((previousPage + 1) << _pageSizeBits);
            ShiftHeadAddress(DesiredHeadAddress(page), callerEntry);
            Interlocked.Increment(ref _pageTurnsRefused);
            return AllocationResult.RetryLater;
        }

        if (IsHeld((page + 1) << _pageSizeBits, callerEntry))
        {
            // A compaction is catching up with a log over its limit: the writer waits, bounded (HybridLog.WriterHold).
            return AllocationResult.RetryLater;
        }

        PageOpened();
        PrepareFrame(page);
        ShiftReadOnlyAddress((page + 1 - _mutablePages) << _pageSizeBits, callerEntry);
        if (_device is not null)
        {
            ShiftHeadAddress(DesiredHeadAddress(page), callerEntry);
            _pageTurned.Signal();
        }

        return AllocationResult.Success;
    }

    private readonly Utilities.AsyncSignal _pageTurned = new();

    /// <summary>Completes at the next page turn of a log with a device (pages move toward eviction).</summary>
    public Task PageTurned => _pageTurned.NextSignal;

    /// <summary>Completes <see cref="PageTurned"/> without a page turn: background loops that await it (never with a
    /// cancellation token: a token's wait allocated on the thread that turned the page, at every turn) are stopped
    /// this way.</summary>
    public void WakePageTurnWaiters() => _pageTurned.Signal();

    private static long TailWord(long page, int offset) => (page << 32) | (uint)offset;

    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct PaddedTail
    {
        [FieldOffset(64)]
        public long Word;
    }
}
