using System.Runtime.ExceptionServices;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Log;

/// <summary>Flushing read-only pages to the device and evicting flushed pages from memory (FASTER §5.2, §6.1).</summary>
internal sealed partial class HybridLog
{
    private readonly FlushTracker _flushTracker;
    private readonly AsyncSignal _spaceSignal = new();
    private ExceptionDispatchInfo? _flushError;
    private int _outstandingFlushes;

    /// <summary>Everything below this address is durable on the device.</summary>
    public long FlushedUntilAddress => _flushTracker.FlushedUntilAddress;

    /// <summary>
    /// Completes when log space may have become available (a flush finished or the head moved). Take it before
    /// re-checking, then wait.
    /// </summary>
    public Task SpaceSignal => _spaceSignal.NextSignal;

    /// <summary>The first flush failure, if any; once a flush failed the log cannot evict past it.</summary>
    public Exception? FlushError => _flushError?.SourceException;

    private void OnReadOnlyAddressSafe(long newSafeReadOnlyAddress)
    {
        long old = Volatile.Read(ref _safeReadOnlyAddress);
        while (newSafeReadOnlyAddress > old)
        {
            long seen = Interlocked.CompareExchange(ref _safeReadOnlyAddress, newSafeReadOnlyAddress, old);
            if (seen == old)
            {
                // Nobody updates [old, new) in place any more, so it can be written out (Alg. 1, update_safe_ro).
                FlushRange(old, newSafeReadOnlyAddress);
                return;
            }

            old = seen;
        }
    }

    private void FlushRange(long start, long end)
    {
        if (_device is null || _disposed)
        {
            return;
        }

        // One write per page, so that each comes from a single frame.
        for (long page = start >> _pageSizeBits; (page << _pageSizeBits) < end; page++)
        {
            long from = Math.Max(start, page << _pageSizeBits);
            long to = Math.Min(end, (page + 1) << _pageSizeBits);
            Interlocked.Increment(ref _outstandingFlushes);
            _ = FlushPageRangeAsync(_device, page, from, to);
        }
    }

    private async Task FlushPageRangeAsync(StorageDevice device, long page, long from, long to)
    {
        try
        {
            // Whole sectors, within the page. The sectors at the edges may hold bytes outside [from, to): before
            // 'from' they were flushed already; after 'to' they are rewritten when their own range is flushed. Today
            // every range starts on a page boundary, so two flushes never share a sector; a range that starts inside
            // a page (a fold-over checkpoint) must not be written before the flush of the sector it shares has
            // completed, or the older copy of that sector could land last.
            long sectorMask = device.SectorSize - 1;
            long pageEnd = (page + 1) << _pageSizeBits;
            long alignedFrom = from & ~sectorMask;
            long alignedTo = Math.Min((to + sectorMask) & ~sectorMask, pageEnd);
            Memory<byte> source = _frameMemory[page & _frameMask]!.Memory
                .Slice((int)(alignedFrom & _offsetMask), (int)(alignedTo - alignedFrom));
            await device.WriteAsync(alignedFrom, source).ConfigureAwait(false);
            if (_flushTracker.Complete(from, to))
            {
                ShiftHeadAddress(DesiredHeadAddress(TailAddress >> _pageSizeBits), LightEpoch.NoEntry);
            }
        }
#pragma warning disable CA1031 // A flush failure is recorded and surfaces to every operation that needs the space.
        catch (Exception error)
#pragma warning restore CA1031
        {
            if (Interlocked.CompareExchange(ref _flushError, ExceptionDispatchInfo.Capture(error), null) is null)
            {
                StoreLog.FlushFailed(_logger, from, to, error);
            }
        }
        finally
        {
            Interlocked.Decrement(ref _outstandingFlushes);
            _spaceSignal.Signal();
        }
    }

    /// <summary>
    /// Where the head should be while the tail is in <paramref name="tailPage"/>: one frame behind the buffer's
    /// capacity, so that the next page turn finds a free frame without waiting for an eviction.
    /// </summary>
    private long DesiredHeadAddress(long tailPage) =>
        Math.Max(BeginAddress, (tailPage + 2 - _frames.Length) << _pageSizeBits);

    private void ThrowIfFlushFailed()
    {
        if (_flushError is { } error)
        {
            throw new StorageDeviceException(
                "The log cannot make room in memory because writing a page to its device failed; operations that " +
                "need a new record fail until the store is reopened. Data already written is intact.",
                error.SourceException);
        }
    }

    private void WaitForOutstandingFlushes()
    {
        while (Volatile.Read(ref _outstandingFlushes) > 0)
        {
            Task signal = SpaceSignal;
            if (Volatile.Read(ref _outstandingFlushes) > 0)
            {
                signal.Wait(TimeSpan.FromMilliseconds(100));
            }
        }
    }
}
