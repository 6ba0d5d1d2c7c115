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
    /// Reserves <paramref name="size"/> bytes at the tail. Fails, leaving the tail consistent, when the next page has
    /// no free frame.
    /// </summary>
    /// <param name="size">A multiple of 8, at most the page size.</param>
    /// <param name="callerEntry">
    /// The caller's epoch row. The caller may be refreshed while it waits for a page turn, so it must not rely on any
    /// record it found before the call staying in memory unless it checks the head address again.
    /// </param>
    /// <param name="address">The reserved logical address.</param>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryAllocate(int size, int callerEntry, out long address)
    {
        Debug.Assert(size > 0 && size <= _pageSize && (size & 7) == 0, "Record sizes are 8-byte multiples within a page.");
        long word = Interlocked.Add(ref _tail.Word, size);
        int end = (int)(uint)word;
        if (end <= _pageSize)
        {
            address = ((word >> 32) << _pageSizeBits) | (uint)(end - size);
            return true;
        }

        return TryAllocateSlow(size, callerEntry, word, out address);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool TryAllocateSlow(int size, int callerEntry, long word, out long address)
    {
        var spinner = new SpinWait();
        while (true)
        {
            long page = word >> 32;
            int end = (int)(uint)word;
            if (end <= _pageSize)
            {
                address = (page << _pageSizeBits) | (uint)(end - size);
                return true;
            }

            int start = end - size;
            if (start <= _pageSize)
            {
                // This reservation is the one that crossed the page boundary, so this thread turns the page; every
                // later reservation on this page also overflowed and waits for the turn (Alg. 1, lines 5–16).
                bool opened;
                try
                {
                    opened = TryOpenPage(page + 1, callerEntry);
                }
                catch
                {
                    // Out of native memory, say: the waiters must not wait for a turn that will never come.
                    Volatile.Write(ref _tail.Word, TailWord(page, start));
                    throw;
                }

                if (!opened)
                {
                    // Nothing at or after 'start' was handed out, so rewinding loses no allocation; the waiters see
                    // the offset back inside the page and retry, and fail the same way instead of waiting forever.
                    Volatile.Write(ref _tail.Word, TailWord(page, start));
                    address = LogAddress.Invalid;
                    return false;
                }

                Interlocked.Exchange(ref _tail.Word, TailWord(page + 1, size));
                address = (page + 1) << _pageSizeBits;
                return true;
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

    /// <summary>
    /// Prepares the frame for <paramref name="page"/> and moves the read-only offset to keep the mutable lag
    /// (Alg. 1, buffer_maintenance). Fails if the frame still holds a page that is in memory.
    /// </summary>
    private bool TryOpenPage(long page, int callerEntry)
    {
        long headPage = HeadAddress >> _pageSizeBits;
        if (page - headPage >= _frames.Length || ((page + 1) << _pageSizeBits) - 1 > LogAddress.MaxAddress)
        {
            return false;
        }

        PrepareFrame(page);
        ShiftReadOnlyAddress((page + 1 - _mutablePages) << _pageSizeBits, callerEntry);
        return true;
    }

    private static long TailWord(long page, int offset) => (page << 32) | (uint)offset;

    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct PaddedTail
    {
        [FieldOffset(64)]
        public long Word;
    }
}
