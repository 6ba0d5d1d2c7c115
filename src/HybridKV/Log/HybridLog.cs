using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Log;

/// <summary>
/// The HybridLog record allocator (FASTER §5–6): a 48-bit logical address space whose tail lives in a circular buffer
/// of page frames in native memory, divided by the read-only and safe read-only offsets into a mutable region (updated
/// in place), a fuzzy region and a read-only region, with everything below the head address on a storage device.
/// </summary>
/// <remarks>
/// Offsets only move forward. The order is always
/// <c>BeginAddress &lt;= SafeHeadAddress &lt;= HeadAddress &lt;= FlushedUntilAddress &lt;= SafeReadOnlyAddress
/// &lt;= ReadOnlyAddress &lt;= TailAddress</c>. Without a device the head never moves, so the log grows only until
/// every frame is used, after which allocation reports <see cref="AllocationResult.Full"/>.
/// </remarks>
internal sealed unsafe partial class HybridLog : IDisposable
{
    /// <summary>Frames are aligned for direct I/O on any common device.</summary>
    internal const int FrameAlignment = 4096;

    private readonly LightEpoch _epoch;
    private readonly StorageDevice? _device;
    private readonly ILogger _logger;
    private readonly int _pageSizeBits;
    private readonly int _pageSize;
    private readonly long _offsetMask;
    private readonly long _frameMask;
    private readonly int _mutablePages;

    // Page frames by page number modulo the buffer size; 0 until the first page that needs the frame is opened.
    private readonly nint[] _frames;
    private readonly FrameMemory?[] _frameMemory;

    private long _beginAddress;

    // Records below HeadAddress are read from the device by operations that start now; a frame is reused only once
    // SafeHeadAddress (moved by an epoch trigger, so after every thread has seen the new head) has passed its page.
    private long _headAddress;
    private long _safeHeadAddress;

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
    /// <param name="device">Where pages go when they leave memory; <see langword="null"/> keeps the log in memory.</param>
    /// <param name="logger">Where flush failures are reported.</param>
    /// <param name="format">Writes the records' checksums before pages go to the device; null for a log of raw bytes.</param>
    public HybridLog(
        LightEpoch epoch, int pageSizeBits, int bufferPages, int mutablePages, StorageDevice? device = null,
        ILogger? logger = null, RecordFormat? format = null)
    {
        Debug.Assert(bufferPages >= 2 && (bufferPages & (bufferPages - 1)) == 0, "Frames are a power of two.");
        Debug.Assert(mutablePages >= 1 && mutablePages <= bufferPages, "Mutable pages fit the buffer.");
        Debug.Assert(device is null || device.SectorSize <= 1 << pageSizeBits, "A page holds whole sectors.");
        _epoch = epoch;
        _device = device;
        _format = format;
        _logger = logger ?? NullLogger.Instance;
        _pageSizeBits = pageSizeBits;
        _pageSize = 1 << pageSizeBits;
        _offsetMask = _pageSize - 1;
        _frameMask = bufferPages - 1;
        _mutablePages = mutablePages;
        _frames = new nint[bufferPages];
        _frameMemory = new FrameMemory?[bufferPages];

        _beginAddress = _headAddress = _safeHeadAddress = LogAddress.FirstValid;
        _readOnlyAddress = _safeReadOnlyAddress = LogAddress.FirstValid;
        _flushTracker = new FlushTracker(LogAddress.FirstValid);
        PrepareFrame(0);
        _tail.Word = TailWord(0, (int)LogAddress.FirstValid);
    }

    /// <summary>The size of one page in bytes.</summary>
    public int PageSize => _pageSize;

    /// <summary>The number of page frames the log may keep in memory.</summary>
    public int BufferPages => _frames.Length;

    /// <summary>Whether pages can leave memory.</summary>
    public bool HasDevice => _device is not null;

    /// <summary>The device holding the part of the log below the head, if any.</summary>
    public StorageDevice? Device => _device;

    /// <summary>The lowest address still part of the log.</summary>
    public long BeginAddress => Volatile.Read(ref _beginAddress);

    /// <summary>The lowest address operations starting now find in memory.</summary>
    public long HeadAddress => Volatile.Read(ref _headAddress);

    /// <summary>The lowest address every thread may still find in memory; frames below it can be reused.</summary>
    public long SafeHeadAddress => Volatile.Read(ref _safeHeadAddress);

    /// <summary>Records below this address are not updated in place by operations that start now.</summary>
    public long ReadOnlyAddress => Volatile.Read(ref _readOnlyAddress);

    /// <summary>Records below this address are not updated in place by any thread.</summary>
    public long SafeReadOnlyAddress => Volatile.Read(ref _safeReadOnlyAddress);

    /// <summary>
    /// The end of the log's address space: 2^48 (FASTER §5.1), or less with small pages, because the tail word keeps the
    /// page number in 31 bits (2^40 bytes with 512-byte pages, 2^43 with 4 KiB pages).
    /// </summary>
    public long AddressLimit => Math.Min(LogAddress.MaxAddress + 1, (1L << 31) << _pageSizeBits);

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

    /// <summary>
    /// The record at an in-memory address. The caller holds epoch protection and found the address at or above the
    /// head address of its view, so the frame cannot be reused before the caller leaves protection.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogRecord<TKey, TValue> GetRecord<TKey, TValue>(long address)
        where TKey : unmanaged
        where TValue : unmanaged
    {
        Debug.Assert(address >= SafeHeadAddress && address < TailAddress, "The address is not in memory.");
        byte* frame = (byte*)_frames[(address >> _pageSizeBits) & _frameMask];
        return new LogRecord<TKey, TValue>(frame + (address & _offsetMask));
    }

    /// <summary>
    /// Starts loading the first line of the record at <paramref name="address"/> if it is in memory. The caller holds
    /// epoch protection and found the address in the index or a chain, so it lies below the tail; a frame reused
    /// meanwhile only makes the hint useless, never wrong.
    /// </summary>
    /// <remarks>The tail is not read: writers change its line at every allocation, so reading it was a miss on another
    /// core's cache for every prefetch (2 % of a compaction's samples).</remarks>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Prefetch(long address)
    {
        if (address >= Volatile.Read(ref _headAddress))
        {
            Utilities.CacheLine.Prefetch((byte*)_frames[(address >> _pageSizeBits) & _frameMask] + (address & _offsetMask));
        }
    }

    /// <summary>
    /// The frame of the in-memory page at <paramref name="pageAddress"/>, for walking its records. The caller holds epoch
    /// protection and found the page at or above the head of its view.
    /// </summary>
    public byte* PageFrame(long pageAddress)
    {
        Debug.Assert((pageAddress & _offsetMask) == 0 && pageAddress >= (SafeHeadAddress & ~_offsetMask),
            "A page in memory.");
        return (byte*)_frames[(pageAddress >> _pageSizeBits) & _frameMask];
    }

    /// <summary>
    /// Moves the read-only offset to <paramref name="newReadOnlyAddress"/> (if it is ahead) and, once every thread has
    /// seen that, the safe read-only offset too, which flushes what became read-only (FASTER Alg. 1, lines 29–35).
    /// </summary>
    public void ShiftReadOnlyAddress(long newReadOnlyAddress, int callerEntry)
    {
        newReadOnlyAddress = Math.Min(newReadOnlyAddress, TailAddress);
        if (Monotonic.TryRaise(ref _readOnlyAddress, newReadOnlyAddress))
        {
            _epoch.BumpCurrentEpoch(s_onReadOnlyAddressSafe, this, newReadOnlyAddress, callerEntry);
        }
    }

    // Static, with the log as state: a page turn's trigger actions allocate nothing.
    private static readonly Action<object?, long> s_onReadOnlyAddressSafe =
        static (log, address) => ((HybridLog)log!).OnReadOnlyAddressSafe(address);

    private static readonly Action<object?, long> s_onHeadAddressSafe =
        static (log, address) => ((HybridLog)log!).OnHeadAddressSafe(address);

    private void OnHeadAddressSafe(long newHead)
    {
        Monotonic.TryRaise(ref _safeHeadAddress, newHead);
        _spaceSignal.Signal();
    }

    /// <summary>
    /// Moves the head toward <paramref name="desiredHeadAddress"/>, but never past what is flushed, and once every
    /// thread has seen the new head, lets its frames be reused (FASTER Alg. 1, lines 22–28).
    /// </summary>
    public void ShiftHeadAddress(long desiredHeadAddress, int callerEntry)
    {
        long newHead = Math.Min(desiredHeadAddress, FlushedUntilAddress) & ~_offsetMask;
        if (newHead > HeadAddress && Monotonic.TryRaise(ref _headAddress, newHead))
        {
            _epoch.BumpCurrentEpoch(s_onHeadAddressSafe, this, newHead, callerEntry);
        }
    }

    /// <summary>Addresses scans still need; the begin address moves through <see cref="LogPins.ShiftBegin"/>.</summary>
    public LogPins Pins { get; } = new();

    /// <summary>
    /// Moves the begin address: records below it read as absent for operations that start now.
    /// </summary>
    /// <returns>The epoch after which no operation can still be reading below the new begin address.</returns>
    public long ShiftBeginAddress(long newBeginAddress)
    {
        Monotonic.TryRaise(ref _beginAddress, newBeginAddress);
        return _epoch.BumpCurrentEpoch(static () => { });
    }

    public void Dispose()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        WaitForOutstandingFlushes();
        for (int i = 0; i < _frames.Length; i++)
        {
            if (_frames[i] != 0)
            {
                LargeMemory.Free((void*)_frames[i]);
                _frames[i] = 0;
                _frameMemory[i] = null;
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
            void* memory = LargeMemory.AllocateZeroed((nuint)_pageSize, FrameAlignment);
            _frameMemory[index] = new FrameMemory((byte*)memory, _pageSize);
            Volatile.Write(ref _frames[index], (nint)memory);
        }
        else
        {
            NativeMemory.Clear((void*)_frames[index], (nuint)_pageSize);
        }
    }
}
