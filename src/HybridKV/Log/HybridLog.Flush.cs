using System.Runtime.ExceptionServices;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Log;

/// <summary>Flushing read-only pages to the device and evicting flushed pages from memory (FASTER §5.2, §6.1).</summary>
internal sealed partial class HybridLog
{
    private FlushTracker _flushTracker;

    // Writes the records' checksums before a range goes to the device; null only for logs without records (tests).
    private readonly RecordFormat? _format;

    // Flush ranges are issued in address order under this lock. A range that starts inside a sector (after a
    // fold-over checkpoint, or recovery, ended a flush mid-page) waits for the write of the range before it, which
    // holds an older copy of that sector: otherwise the older copy could land last.
    private readonly object _flushIssueLock = new();
    private Task _lastFlushWrite = Task.CompletedTask;
    private readonly AsyncSignal _spaceSignal = new();
    private ExceptionDispatchInfo? _flushError;

    // The lowest address a failed flush should have written: the flushed prefix, and so the head, never pass it. Below
    // it, flushes still in flight (or an eviction whose epoch trigger has not run yet) free their frames as usual.
    private long _flushFailedFrom = long.MaxValue;
    private int _outstandingFlushes;

    /// <summary>Everything below this address is durable on the device.</summary>
    public long FlushedUntilAddress => _flushTracker.FlushedUntilAddress;

    /// <summary>
    /// Completes when log space may have become available (a flush finished or the head moved). Take it before
    /// re-checking, then wait.
    /// </summary>
    public Task SpaceSignal => _spaceSignal.NextSignal;

    /// <summary>The signal behind <see cref="SpaceSignal"/>, for a thread that blocks on it
    /// (<see cref="AsyncSignal.WaitBlocking"/>) rather than awaiting.</summary>
    public AsyncSignal Space => _spaceSignal;

    /// <summary>Wakes operations waiting for log space so that they try again (for a reason other than space).</summary>
    public void SignalSpace() => _spaceSignal.Signal();

    /// <summary>The first flush failure, if any; once a flush failed the log cannot evict past it.</summary>
    public Exception? FlushError => _flushError?.SourceException;

    private void OnReadOnlyAddressSafe(long newSafeReadOnlyAddress)
    {
        lock (_flushIssueLock)
        {
            long old = Volatile.Read(ref _safeReadOnlyAddress);
            if (newSafeReadOnlyAddress > old)
            {
                Volatile.Write(ref _safeReadOnlyAddress, newSafeReadOnlyAddress);
                // Nobody updates [old, new) in place any more, so it can be written out (Alg. 1, update_safe_ro).
                FlushRange(old, newSafeReadOnlyAddress);
            }
        }
    }

    private void FlushRange(long start, long end)
    {
        if (_device is null || _disposed)
        {
            return;
        }

        // One write per page, so that each comes from a single frame.
        long sectorMask = _device.SectorSize - 1;
        for (long page = start >> _pageSizeBits; (page << _pageSizeBits) < end; page++)
        {
            long from = Math.Max(start, page << _pageSizeBits);
            long to = Math.Min(end, (page + 1) << _pageSizeBits);
            Interlocked.Increment(ref _outstandingFlushes);
            if (((from | to) & sectorMask) == 0)
            {
                // Whole sectors (every full page): nothing to order, and nothing allocated.
                RentFlush().Start(page, from, to);
            }
            else
            {
                // A range ending inside a sector is followed by one starting in it (after a fold-over checkpoint or
                // recovery ended a flush mid-page): the second waits for the first's write, which holds an older copy
                // of that sector; otherwise the older copy could land last.
                Task sharedSector = (from & sectorMask) != 0 ? _lastFlushWrite : Task.CompletedTask;
                _lastFlushWrite = FlushAfterAsync(sharedSector, page, from, to);
            }
        }
    }

    private async Task FlushAfterAsync(Task sharedSector, long page, long from, long to)
    {
        try
        {
            await sharedSector.ConfigureAwait(false);
            await BeginWrite(page, from, to).ConfigureAwait(false);
        }
#pragma warning disable CA1031 // A flush failure is recorded and surfaces to every operation that needs the space.
        catch (Exception error)
#pragma warning restore CA1031
        {
            EndWrite(from, to, error);
            return;
        }

        EndWrite(from, to, error: null);
    }

    /// <summary>Writes the range's checksums and issues its write: whole sectors, within the page. The sectors at the
    /// edges may hold bytes outside [from, to): before 'from' they were flushed already (and that write has completed:
    /// see <see cref="FlushRange"/>); after 'to' they are rewritten when their own range is flushed.</summary>
    private ValueTask BeginWrite(long page, long from, long to)
    {
        StorageDevice device = _device!;
        WriteChecksums(page, from, to);
        long sectorMask = device.SectorSize - 1;
        long pageEnd = (page + 1) << _pageSizeBits;
        long alignedFrom = from & ~sectorMask;
        long alignedTo = Math.Min((to + sectorMask) & ~sectorMask, pageEnd);
        Memory<byte> source = _frameMemory[page & _frameMask]!.Memory
            .Slice((int)(alignedFrom & _offsetMask), (int)(alignedTo - alignedFrom));
        return device.WriteAsync(alignedFrom, source);
    }

    /// <summary>A flush's write completed, or failed with <paramref name="error"/>: the flushed prefix and the head move
    /// on, or the failure is recorded; waiters for space are woken either way.</summary>
    private void EndWrite(long from, long to, Exception? error)
    {
        try
        {
            if (error is not null)
            {
                InterlockedMin(ref _flushFailedFrom, from);
                if (Interlocked.CompareExchange(ref _flushError, ExceptionDispatchInfo.Capture(error), null) is null)
                {
                    StoreLog.FlushFailed(_logger, from, to, error);
                }
            }
            else if (_flushTracker.Complete(from, to))
            {
                ShiftHeadAddress(DesiredHeadAddress(TailAddress >> _pageSizeBits), LightEpoch.NoEntry);
            }
        }
        finally
        {
            Interlocked.Decrement(ref _outstandingFlushes);
            _spaceSignal.Signal();
        }
    }

    /// <summary>The records of [from, to) are read-only from now on (the range is below the safe read-only address):
    /// their checksums can be written.</summary>
    private unsafe void WriteChecksums(long page, long from, long to) =>
        _format?.WriteChecksums((byte*)_frames[page & _frameMask], page << _pageSizeBits, _pageSize, from, to, Links);

    /// <summary>Where flushes note what their records were linked in front of, for log compaction; null: nowhere.</summary>
    public FlushedLinks? Links { get; set; }

    /// <summary>
    /// Where the head should be while the tail is in <paramref name="tailPage"/>: one frame behind the buffer's
    /// capacity, so that the next page turn finds a free frame without waiting for an eviction.
    /// </summary>
    private long DesiredHeadAddress(long tailPage) =>
        Math.Max(BeginAddress, (tailPage + 2 - _frames.Length) << _pageSizeBits);

    private static void InterlockedMin(ref long target, long value)
    {
        long current = Volatile.Read(ref target);
        while (value < current)
        {
            long seen = Interlocked.CompareExchange(ref target, value, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }

    /// <summary>The failed flush, if one failed below <paramref name="address"/>: the log can never be durable, nor
    /// evicted, up to that address.</summary>
    private ExceptionDispatchInfo? FlushErrorBelow(long address) =>
        Volatile.Read(ref _flushFailedFrom) < address ? Volatile.Read(ref _flushError) : null;

    /// <summary>Throws if a page ending at <paramref name="evictedUntil"/> can never leave memory because a flush
    /// below that address failed. A failure above it does not: the page's own flush may still be in flight.</summary>
    private void ThrowIfFlushFailed(long evictedUntil)
    {
        if (FlushErrorBelow(evictedUntil) is { } error)
        {
            throw new StorageDeviceException(
                "The log cannot make room in memory because writing a page to its device failed; operations that " +
                "need a new record fail until the store is reopened. Data already written is intact.",
                error.SourceException);
        }
    }

    /// <summary>
    /// Completes once everything below <paramref name="address"/> is written to the device; fails if a flush failed.
    /// </summary>
    public async Task WaitForFlushAsync(long address, CancellationToken cancellationToken)
    {
        while (true)
        {
            Task signal = SpaceSignal;
            if (FlushedUntilAddress >= address)
            {
                return;
            }

            if (FlushErrorBelow(address) is { } error)
            {
                throw new StorageDeviceException(
                    $"Writing the log to its device failed below address {address}.", error.SourceException);
            }

            await signal.WaitOrTimeoutAsync(TimeSpan.FromMilliseconds(100), cancellationToken).ConfigureAwait(false);
            cancellationToken.ThrowIfCancellationRequested();
        }
    }

    private void WaitForOutstandingFlushes()
    {
        while (Volatile.Read(ref _outstandingFlushes) > 0)
        {
            long mark = _spaceSignal.BlockingMark;
            if (Volatile.Read(ref _outstandingFlushes) > 0)
            {
                _spaceSignal.WaitBlocking(mark, TimeSpan.FromMilliseconds(100));
            }
        }
    }
}
