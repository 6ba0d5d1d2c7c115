using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Log;

/// <summary>
/// The HybridLog record allocator (FASTER §5–6): a 48-bit logical address space whose tail lives in a circular buffer
/// of page frames in native memory, divided by the read-only and safe read-only offsets into a mutable region (updated
/// in place), a fuzzy region and a read-only region.
/// </summary>
/// <remarks>
/// Offsets only move forward. The order is always
/// <c>BeginAddress &lt;= HeadAddress &lt;= SafeReadOnlyAddress &lt;= ReadOnlyAddress &lt;= TailAddress</c>.
/// This version keeps the whole log in memory: the head never moves, so the log can grow only until every frame is
/// used, after which allocation fails instead of overwriting a page.
/// </remarks>
internal sealed unsafe partial class HybridLog : IDisposable
{
    /// <summary>Frames are aligned for direct I/O on any common device.</summary>
    internal const int FrameAlignment = 4096;

    private readonly LightEpoch _epoch;
    private readonly int _pageSizeBits;
    private readonly int _pageSize;
    private readonly long _offsetMask;
    private readonly long _frameMask;
    private readonly int _mutablePages;

    // Page frames by page number modulo the buffer size; 0 until the first page that needs the frame is opened.
    private readonly nint[] _frames;

    private long _beginAddress;
    private long _headAddress;

    // Invariant (FASTER §6.2): every thread that may still decide "in place" for an address below ReadOnlyAddress
    // was protected in an epoch that started before the read-only offset moved past it; SafeReadOnlyAddress only
    // follows once that epoch is safe.
    private long _readOnlyAddress;
    private long _safeReadOnlyAddress;

    private bool _disposed;

    /// <summary>Creates an empty log.</summary>
    /// <param name="epoch">The epoch framework that orders offset changes with operations.</param>
    /// <param name="pageSizeBits">log2 of the page size.</param>
    /// <param name="bufferPages">The number of page frames in memory, a power of two of at least 2.</param>
    /// <param name="mutablePages">How many of the newest pages are updated in place, from 1 to bufferPages.</param>
    public HybridLog(LightEpoch epoch, int pageSizeBits, int bufferPages, int mutablePages)
    {
        Debug.Assert(bufferPages >= 2 && (bufferPages & (bufferPages - 1)) == 0, "Frames are a power of two.");
        Debug.Assert(mutablePages >= 1 && mutablePages <= bufferPages, "Mutable pages fit the buffer.");
        _epoch = epoch;
        _pageSizeBits = pageSizeBits;
        _pageSize = 1 << pageSizeBits;
        _offsetMask = _pageSize - 1;
        _frameMask = bufferPages - 1;
        _mutablePages = mutablePages;
        _frames = new nint[bufferPages];

        _beginAddress = _headAddress = _readOnlyAddress = _safeReadOnlyAddress = LogAddress.FirstValid;
        PrepareFrame(0);
        _tail.Word = TailWord(0, (int)LogAddress.FirstValid);
    }

    /// <summary>The size of one page in bytes.</summary>
    public int PageSize => _pageSize;

    /// <summary>The number of page frames the log may keep in memory.</summary>
    public int BufferPages => _frames.Length;

    /// <summary>The lowest address still part of the log.</summary>
    public long BeginAddress => Volatile.Read(ref _beginAddress);

    /// <summary>The lowest address held in memory.</summary>
    public long HeadAddress => Volatile.Read(ref _headAddress);

    /// <summary>Records below this address are not updated in place by operations that start now.</summary>
    public long ReadOnlyAddress => Volatile.Read(ref _readOnlyAddress);

    /// <summary>Records below this address are not updated in place by any thread.</summary>
    public long SafeReadOnlyAddress => Volatile.Read(ref _safeReadOnlyAddress);

    /// <summary>The next address to be allocated.</summary>
    public long TailAddress
    {
        get
        {
            long word = Volatile.Read(ref _tail.Word);
            long offset = Math.Min((uint)word, (uint)_pageSize);
            // Added, not or-ed: while a page turns the offset equals the page size and carries into the page bits.
            return ((word >> 32) << _pageSizeBits) + offset;
        }
    }

    /// <summary>
    /// Reads the offsets one operation decides by. Safe read-only is read before read-only so that the view never has
    /// safe read-only above read-only, which would let one address be both "in place" and "copy" for this thread.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogView GetView()
    {
        long begin = Volatile.Read(ref _beginAddress);
        long head = Volatile.Read(ref _headAddress);
        long safeReadOnly = Volatile.Read(ref _safeReadOnlyAddress);
        long readOnly = Volatile.Read(ref _readOnlyAddress);
        return new LogView(begin, head, safeReadOnly, readOnly);
    }

    /// <summary>The record at an in-memory address. The caller holds epoch protection.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogRecord<TKey, TValue> GetRecord<TKey, TValue>(long address)
        where TKey : unmanaged
        where TValue : unmanaged
    {
        Debug.Assert(address >= HeadAddress && address < TailAddress, "The address is not in memory.");
        byte* frame = (byte*)_frames[(address >> _pageSizeBits) & _frameMask];
        return new LogRecord<TKey, TValue>(frame + (address & _offsetMask));
    }

    /// <summary>
    /// Moves the read-only offset to <paramref name="newReadOnlyAddress"/> (if it is ahead) and, once every thread has
    /// seen that, the safe read-only offset too (FASTER Alg. 1, lines 29–31).
    /// </summary>
    public void ShiftReadOnlyAddress(long newReadOnlyAddress, int callerEntry)
    {
        newReadOnlyAddress = Math.Min(newReadOnlyAddress, TailAddress);
        if (Monotonic.TryRaise(ref _readOnlyAddress, newReadOnlyAddress))
        {
            _epoch.BumpCurrentEpoch(() => OnReadOnlyAddressSafe(newReadOnlyAddress), callerEntry);
        }
    }

    private void OnReadOnlyAddressSafe(long newSafeReadOnlyAddress)
    {
        Monotonic.TryRaise(ref _safeReadOnlyAddress, newSafeReadOnlyAddress);
    }

    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        for (int i = 0; i < _frames.Length; i++)
        {
            if (_frames[i] != 0)
            {
                NativeMemory.AlignedFree((void*)_frames[i]);
                _frames[i] = 0;
            }
        }
    }

    /// <summary>The number of frames holding memory (for tests and statistics).</summary>
    internal int AllocatedFrameCount => _frames.Count(f => f != 0);

    private void PrepareFrame(long page)
    {
        long index = page & _frameMask;
        if (_frames[index] == 0)
        {
            void* memory = NativeMemory.AlignedAlloc((nuint)_pageSize, FrameAlignment);
            NativeMemory.Clear(memory, (nuint)_pageSize);
            Volatile.Write(ref _frames[index], (nint)memory);
        }
        else
        {
            NativeMemory.Clear((void*)_frames[index], (nuint)_pageSize);
        }
    }
}
