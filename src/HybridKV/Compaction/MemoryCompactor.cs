using System.Numerics;
using HybridKV.Diagnostics;
using HybridKV.Log;
using HybridKV.Operations;
using Microsoft.Extensions.Logging;

namespace HybridKV.Compaction;

/// <summary>
/// Keeps the current copy of live records in memory when the log grows without the live data growing: every commit
/// copies records that later updates cannot change in place (CPR §6.2.4), so a store whose data fits in memory would
/// otherwise push the only current copy of its untouched keys to the device, page after page, and read it back from
/// there at device speed. Before each page reaches the head, this copies its live records to the tail, if they fill at
/// most <see cref="StoreSettings.MemoryCompactionMaxLiveFraction"/> of the page or, with the live data of the last trip
/// through memory (<see cref="LiveBytesWindow"/>), of memory. Otherwise the store is larger than memory and the page
/// leaves memory as usual: copying it would only rotate data that does not fit.
/// </summary>
/// <remarks>
/// Runs in the background at page turns, on the pages nearest the head, so it never delays an operation; when it falls
/// behind, or a commit is capturing, a page simply leaves memory with its records, which stay correct on the device.
/// While pages keep coming out mostly live it examines only some of them (<see cref="PageSampling"/>).
/// </remarks>
internal sealed class MemoryCompactor : IDisposable
{
    private readonly HybridLog _log;
    private readonly IPageCompactor _pages;
    private readonly ILogger _logger;
    private readonly int _epochEntry;
    private readonly long _maxLiveBytes;
    private readonly long _maxLiveBytesInMemory;
    private readonly LiveBytesWindow _recentLive;
    private readonly PageSampling _sampling;
    private readonly int _lookaheadPages;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Task _loop;
    private long _nextPage;
    private long _pagesExamined;
    private long _recordsCopied;
    private long _bytesCopied;
    private long _pagesMostlyLive;
    private long _pagesMissed;
    private long _pagesSkipped;
    private long _lastLiveBytes;
    private long _busyTicks;

    public MemoryCompactor(HybridLog log, int epochEntry, IPageCompactor pages, double maxLiveFraction,
        ILogger logger)
    {
        _log = log;
        _epochEntry = epochEntry;
        _pages = pages;
        _logger = logger;
        _maxLiveBytes = (long)(maxLiveFraction * log.PageSize);
        _maxLiveBytesInMemory = (long)(maxLiveFraction * log.PageSize * log.BufferPages);
        _recentLive = new LiveBytesWindow(log.BufferPages);
        _sampling = new PageSampling(log.BufferPages);
        // The pages nearest eviction: early enough to finish before the head passes them, late enough that updates
        // have already moved most of what they were going to move.
        _lookaheadPages = Math.Max(1, log.BufferPages / 4);
        _nextPage = log.HeadAddress & ~(log.PageSize - 1L);
        _loop = Task.Run(RunAsync);
    }

    /// <summary>Pages whose live records were measured.</summary>
    public long PagesExamined => Interlocked.Read(ref _pagesExamined);

    /// <summary>Pages that left memory with their records because most were live.</summary>
    public long PagesMostlyLive => Interlocked.Read(ref _pagesMostlyLive);

    /// <summary>Pages that left memory before this could examine them (it fell behind the tail).</summary>
    public long PagesMissed => Interlocked.Read(ref _pagesMissed);

    /// <summary>Pages that left memory unexamined because the pages before them were mostly live.</summary>
    public long PagesSkipped => Interlocked.Read(ref _pagesSkipped);

    /// <summary>Time spent examining and copying pages.</summary>
    public TimeSpan BusyTime => System.Diagnostics.Stopwatch.GetElapsedTime(0, Interlocked.Read(ref _busyTicks));

    /// <summary>Records copied forward to the tail.</summary>
    public long RecordsCopied => Interlocked.Read(ref _recordsCopied);

    /// <summary>Bytes of records copied forward to the tail.</summary>
    public long BytesCopied => Interlocked.Read(ref _bytesCopied);

    private async Task RunAsync()
    {
        while (true)
        {
            // Taken before the check: a stop after it completes the task (Dispose wakes the page-turn waiters).
            Task turned = _log.PageTurned;
            if (_stopping.IsCancellationRequested)
            {
                return;
            }

            try
            {
                CompactPagesNearHead();
            }
#pragma warning disable CA1031 // A user callback (hash or key equality) failed: compaction stops, the store goes on.
            catch (Exception error)
#pragma warning restore CA1031
            {
                StoreLog.MemoryCompactionFailed(_logger, error);
                return;
            }

            // Awaited as it is: a wait with the token made the writer that turned the page allocate, at every turn.
            await turned.ConfigureAwait(false);
        }
    }

    private void CompactPagesNearHead()
    {
        // A page's frame is taken when the tail opens the page BufferPages later: compact those whose frames the next
        // few page turns take, no earlier (records updated before then move by themselves), and only once no thread
        // may change them in place.
        long pageMask = _log.PageSize - 1L;
        long head = _log.HeadAddress & ~pageMask;
        long tailPage = _log.TailAddress >> BitOperations.Log2((uint)_log.PageSize);
        long evictedSoon = (tailPage + _lookaheadPages - _log.BufferPages + 1) * _log.PageSize;
        long limit = Math.Min(evictedSoon, _log.SafeReadOnlyAddress & ~pageMask);
        for (; _nextPage < head; _nextPage += _log.PageSize)
        {
            RecordMissed();
        }

        int pageBits = BitOperations.Log2((uint)_log.PageSize);
        for (long page = _nextPage; page < limit && !_stopping.IsCancellationRequested; page += _log.PageSize)
        {
            if (!_sampling.Examines(page >> pageBits))
            {
                _nextPage = page + _log.PageSize;
                // Taken to hold what the last examined page held, so that the window still follows the live data.
                _recentLive.Add(_lastLiveBytes);
                Interlocked.Increment(ref _pagesSkipped);
                continue;
            }

            long started = System.Diagnostics.Stopwatch.GetTimestamp();
            // A mostly live page is copied too while the live data of the last trip through memory, with it, fits.
            long maxLiveBytes = Math.Max(_maxLiveBytes, _maxLiveBytesInMemory - _recentLive.SumBeforeNext);
            PageCompaction result = _pages.CompactPage(page, maxLiveBytes, _epochEntry);
            Interlocked.Add(ref _busyTicks, System.Diagnostics.Stopwatch.GetTimestamp() - started);
            if (result.Outcome == PageCompactionOutcome.Stopped && page + _log.PageSize > _log.HeadAddress)
            {
                // A commit phase or a full tail stopped it: what is left of the page is tried again at the next turn.
                return;
            }

            _nextPage = page + _log.PageSize;
            if (result.Outcome == PageCompactionOutcome.Evicted)
            {
                RecordMissed();
            }
            else
            {
                _recentLive.Add(result.LiveBytes);
                _lastLiveBytes = result.LiveBytes;
                _sampling.Examined(mostlyLive: result.Outcome == PageCompactionOutcome.MostlyLive);
                Interlocked.Increment(ref _pagesExamined);
                if (result.Outcome == PageCompactionOutcome.MostlyLive)
                {
                    Interlocked.Increment(ref _pagesMostlyLive);
                }

                Interlocked.Add(ref _recordsCopied, result.CopiedRecords);
                Interlocked.Add(ref _bytesCopied, result.CopiedBytes);
            }
        }
    }

    /// <summary>
    /// A page left memory before it was measured: counted as all live, so that a compactor that falls behind does not
    /// take the store for one that fits in memory.
    /// </summary>
    private void RecordMissed()
    {
        Interlocked.Increment(ref _pagesMissed);
        _recentLive.Add(_log.PageSize);
    }

    /// <summary>Stops the background work and waits for it.</summary>
    public void Dispose()
    {
        _stopping.Cancel();
        _log.WakePageTurnWaiters();
        _loop.GetAwaiter().GetResult();
        _stopping.Dispose();
    }
}

/// <summary>The engine's part of compaction: copying one page's live records forward.</summary>
internal interface IPageCompactor
{
    /// <inheritdoc cref="StoreEngine{TKey, TValue, TInput, TOutput, TContext, TFunctions}.CompactPage"/>
    PageCompaction CompactPage(long pageAddress, long maxLiveBytes, int epochEntry);
}
