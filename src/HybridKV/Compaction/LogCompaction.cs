using System.Diagnostics;
using HybridKV.Diagnostics;
using HybridKV.Operations;
using HybridKV.Utilities;
using Microsoft.Extensions.Logging;

namespace HybridKV.Compaction;

/// <summary>
/// The log's lifecycle on the device: compactions one at a time (manual or by policy), each copying the live records
/// of the oldest part forward, then moving the begin address (segments go once no kept checkpoint needs them) and
/// emptying index entries that led only below it.
/// </summary>
/// <remarks>
/// The policy (<see cref="StoreSettings.LogCompactionRatio"/>): once the log is at least
/// <see cref="StoreSettings.LogCompactionMinBytes"/>, compact the oldest quarter of the device part (at least the minimum;
/// with a writer limit, no more than brings the log from the limit back to the ratio) when the log is more than the
/// ratio times the live data: for fixed-size records, the index's entries times the record size; otherwise what the
/// last compaction kept (before the first, at once). While an automatic compaction runs and the log's part on the
/// device is over <see cref="StoreSettings.LogSizeLimitRatio"/> times the live data, writers wait at page turns
/// (bounded: <see cref="StoreSettings.LogSizeLimitMaxWait"/> per turn). An automatic compaction's segments are deleted
/// while the next one copies.
/// </remarks>
internal sealed class LogCompaction<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly Func<long, CancellationToken, (long Address, Task Truncated)> _shiftBeginAddress;
    private readonly ILogger _logger;
    private readonly CancellationToken _stopping;
    private readonly SemaphoreSlim _oneAtATime = new(1, 1);
    private LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions>? _compactor;
    // Where compactions go on after their device reads; made with the compactor, at the first compaction.
    private ContinuationThread? _thread;
    private Task _automatic = Task.CompletedTask;
    private Task _truncating = Task.CompletedTask;
    private long _estimatedLiveBytes = -1;
    private long _compactions;
    private long _bytesCopied;
    private long _lastBytesCopied;
    private long _bytesReclaimed;

    // 1 while index entries may lead below the begin address for another reason than a compaction's drops (a store
    // opened from a checkpoint, the begin address moved by hand): the next compaction sweeps the index whatever it drops.
    private int _reclaimOwed = 1;

    public LogCompaction(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        Func<long, CancellationToken, (long Address, Task Truncated)> shiftBeginAddress, ILogger logger,
        CancellationToken stopping)
    {
        _engine = engine;
        _shiftBeginAddress = shiftBeginAddress;
        _logger = logger;
        _stopping = stopping;
    }

    /// <summary>Compactions completed.</summary>
    public long Compactions => Interlocked.Read(ref _compactions);

    /// <summary>Bytes of live records copied forward by compactions.</summary>
    public long BytesCopied => Interlocked.Read(ref _bytesCopied);

    /// <summary>Bytes of log dropped below the begin address by compactions.</summary>
    public long BytesReclaimed => Interlocked.Read(ref _bytesReclaimed);

    /// <summary>The live data the last compaction estimated, or -1 before the first.</summary>
    public long EstimatedLiveBytes => Interlocked.Read(ref _estimatedLiveBytes);

    /// <summary>The begin address moved without a compaction: the next compaction sweeps the index.</summary>
    public void BeginShiftedByHand() => Volatile.Write(ref _reclaimOwed, 1);

    /// <summary>
    /// Compacts [begin, <paramref name="untilAddress"/>) rounded down to a page boundary, which must be at most the
    /// head address (the caller checked).
    /// </summary>
    public Task<CompactionResult> CompactAsync(long untilAddress, CancellationToken cancellationToken) =>
        CompactAsync(untilAddress, long.MaxValue, TimeSpan.Zero, automatic: false, cancellationToken);

    /// <summary>
    /// Compacts as <see cref="CompactAsync(long, CancellationToken)"/>; while it runs, page turns of a log larger than
    /// <paramref name="holdWritersAbove"/> bytes wait, for at most <paramref name="maxWait"/>
    /// (<see cref="StoreSettings.LogSizeLimitRatio"/>). An <paramref name="automatic"/> compaction returns once the begin
    /// address moved, its segments still being deleted while the next one copies (waiting for the deletion took 5-10
    /// ms of each compaction in the uniform soak); a manual one returns after.
    /// </summary>
    private async Task<CompactionResult> CompactAsync(long untilAddress, long holdWritersAbove, TimeSpan maxWait,
        bool automatic, CancellationToken cancellationToken)
    {
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stopping);
        CancellationToken token = linked.Token;
        await _oneAtATime.WaitAsync(token).ConfigureAwait(false);
        try
        {
            long from = _engine.Log.BeginAddress;
            long until = untilAddress & ~(_engine.Log.PageSize - 1L);
            if (until <= from)
            {
                return new CompactionResult(from, from, 0, 0, 0, 0);
            }

            if (holdWritersAbove != long.MaxValue && maxWait > TimeSpan.Zero)
            {
                _engine.Log.HoldWritersAbove(holdWritersAbove, _engine.LogCompactionEntry, maxWait);
            }

            var started = Stopwatch.StartNew();
            if (_compactor is null)
            {
                var thread = new ContinuationThread("HybridKV compaction");
                try
                {
                    _compactor = new LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
                        _engine, _engine.LogCompactionEntry, thread);
                }
                catch
                {
                    thread.Dispose();
                    throw;
                }

                _thread = thread;
            }

            CompactionResult result = await _compactor.CopyLiveRecordsAsync(from, until, token).ConfigureAwait(false);
            // The rest (the begin address, the index sweep, the log line) and whoever awaits the compaction go on
            // elsewhere: code run on the compaction's thread that waited for a compaction would wait for reads only
            // that thread completes.
            await ContinuationThread.Leave(_thread);
            // A running scan may hold the begin address lower; the copies above it are then merely early.
            // Segments are deleted in order: the last compaction's (which this one's copying ran alongside) first. A
            // failure to delete them is this compaction's failure, once.
            Task truncating = _truncating;
            _truncating = Task.CompletedTask;
            await truncating.WaitAsync(token).ConfigureAwait(false);
            (until, Task truncated) = _shiftBeginAddress(until, _stopping);
            _truncating = truncated;
            if (!automatic)
            {
                try
                {
                    await truncated.WaitAsync(token).ConfigureAwait(false);
                }
                finally
                {
                    // Reported here; one the caller stopped waiting for is the next compaction's to wait for.
                    if (truncated.IsCompleted)
                    {
                        _truncating = Task.CompletedTask;
                    }
                }
            }

            result = result with { UntilAddress = until };
            if (until <= from)
            {
                return result;
            }

            // The log is smaller now: writers go on while the index is swept.
            _engine.Log.ReleaseWriters();
            long reclaimed = 0;
            // Only a record dropped without a copy (a delete marker, an expired value) can leave an entry leading below
            // the new begin address; a sweep of the whole index for nothing cost as much as a fifth of a compaction.
            if (result.TombstonesDropped > 0 || Interlocked.Exchange(ref _reclaimOwed, 0) != 0)
            {
                using (await _engine.Index.LockStructureAsync(token).ConfigureAwait(false))
                {
                    reclaimed = _engine.Index.ReclaimEntriesBelow(until);
                }
            }

            long range = until - from;
            long tail = _engine.Log.TailAddress;
            // The range's live share, applied to the whole log: what the next compaction may expect to keep.
            Interlocked.Exchange(ref _estimatedLiveBytes,
                (long)((double)result.BytesCopied / range * Math.Max(range, tail - from)));
            Interlocked.Increment(ref _compactions);
            Interlocked.Add(ref _bytesCopied, result.BytesCopied);
            Interlocked.Exchange(ref _lastBytesCopied, result.BytesCopied);
            Interlocked.Add(ref _bytesReclaimed, range);
            StoreLog.Compacted(_logger, from, until, result.RecordsCopied, result.BytesCopied, result.RecordsExamined,
                result.TombstonesDropped, reclaimed, started.Elapsed.TotalMilliseconds);
            return result with { IndexEntriesReclaimed = reclaimed };
        }
        finally
        {
            _engine.Log.ReleaseWriters();
            _oneAtATime.Release();
            // Also when the compaction failed: its error is logged and handed on from elsewhere.
            await ContinuationThread.Leave(_thread);
        }
    }

    /// <summary>Starts compacting by policy in the background, woken by page turns.</summary>
    /// <param name="ratio"><see cref="StoreSettings.LogCompactionRatio"/>.</param>
    /// <param name="minBytes">The effective <see cref="StoreSettings.LogCompactionMinBytes"/>.</param>
    /// <param name="limitRatio"><see cref="StoreSettings.LogSizeLimitRatio"/> (0: writers never wait).</param>
    /// <param name="maxWait"><see cref="StoreSettings.LogSizeLimitMaxWait"/>.</param>
    public void StartAutomatic(double ratio, long minBytes, double limitRatio, TimeSpan maxWait)
    {
        _automatic = Task.Run(() => RunAutomaticAsync(ratio, minBytes, limitRatio, maxWait));
    }

    private async Task RunAutomaticAsync(double ratio, long minBytes, double limitRatio, TimeSpan maxWait)
    {
        // After a failure (a damaged segment, a failing device), the next attempt waits 1 s, then twice as long each
        // time up to 5 min: the store keeps serving, and the log does not fill with the same error at every page turn.
        TimeSpan backoff = TimeSpan.Zero;
        long retryAt = 0;
        // Awaited without the token (a wait with it made the writer that turned the page allocate, at every turn):
        // stopping wakes the loop instead.
        using CancellationTokenRegistration wake = _stopping.UnsafeRegister(
            static log => ((Log.HybridLog)log!).WakePageTurnWaiters(), _engine.Log);
        while (true)
        {
            // Taken before the check: a stop after it completes the task.
            Task turned = _engine.Log.PageTurned;
            if (_stopping.IsCancellationRequested)
            {
                return;
            }

            Volatile.Write(ref _automaticIdle, false);
            if (Environment.TickCount64 >= retryAt && NextCompactionUntil(ratio, minBytes, limitRatio) is long until)
            {
                try
                {
                    await CompactAsync(until, WriterLimit(limitRatio, minBytes, until), maxWait, automatic: true,
                        CancellationToken.None).ConfigureAwait(false);
                    backoff = TimeSpan.Zero;
                }
                catch (OperationCanceledException) when (_stopping.IsCancellationRequested)
                {
                    return;
                }
#pragma warning disable CA1031 // Logged; the store goes on and the next trigger tries again.
                catch (Exception error)
#pragma warning restore CA1031
                {
                    backoff = backoff == TimeSpan.Zero ? TimeSpan.FromSeconds(1)
                        : TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, TimeSpan.FromMinutes(5).Ticks));
                    retryAt = Environment.TickCount64 + (long)backoff.TotalMilliseconds;
                    StoreLog.CompactionFailed(_logger, error, backoff.TotalSeconds);
                }
            }
            else
            {
                TakeUpLinksWhileIdle();
                Volatile.Write(ref _automaticIdle, true);
            }

            await turned.ConfigureAwait(false);
        }
    }

    /// <summary>Between compactions, at page turns: takes up the links the flushes noted, as a compaction does while it
    /// runs (<see cref="SupersededKeys{TKey, TValue}"/>), so that the flushes find free batches; skipped while a manual
    /// compaction runs, which does it itself.</summary>
    private void TakeUpLinksWhileIdle()
    {
        if (_engine.Superseded is { } superseded && _oneAtATime.Wait(0))
        {
            try
            {
                superseded.TakeUp(_engine.Log.BeginAddress);
            }
            finally
            {
                _oneAtATime.Release();
            }
        }
    }

    /// <summary>
    /// Whether automatic compaction is waiting for a page turn with nothing to compact (or is off): with no writer
    /// turning pages it stays so. Benchmarks use it to let a store's background work finish before measuring another.
    /// </summary>
    internal bool AutomaticIdle => Volatile.Read(ref _automaticIdle);

    /// <summary>Where the policy would compact to now, or null if not yet.</summary>
    /// <param name="ratio"><see cref="StoreSettings.LogCompactionRatio"/>.</param>
    /// <param name="minBytes">The effective <see cref="StoreSettings.LogCompactionMinBytes"/>.</param>
    /// <param name="limitRatio"><see cref="StoreSettings.LogSizeLimitRatio"/> (0: no limit).</param>
    internal long? NextCompactionUntil(double ratio, long minBytes, double limitRatio)
    {
        long begin = _engine.Log.BeginAddress;
        long size = _engine.Log.TailAddress - begin;
        if (size < minBytes)
        {
            return null;
        }

        long live = LiveBytesNow();
        if (live >= 0 && size <= ratio * live)
        {
            return null;
        }

        // The oldest quarter of the device part, at least the minimum: its records are the oldest, so the fewest are
        // live and the least is copied per byte freed (the newer records are mostly current, and copying them now
        // would only copy them again at the next compaction). Compacting everything on the device copied every live
        // record each time: with a store four times its memory, that was most of the compaction's time. The older half
        // (until the seventh session) copied 14 % of the records examined in the uniform soak where a quarter copies
        // 12 %, and its disk peaked higher (a compaction's segments are deleted while the next one copies): zipf with
        // two writers 3.15x the live data against 2.85x.
        long pageMask = _engine.Log.PageSize - 1L;
        long head = _engine.Log.HeadAddress & ~pageMask;
        long range = (head - begin) / 4;
        if (limitRatio > 0 && live >= 0)
        {
            // With writers held at the limit, no more than brings the log from the limit back to the trigger with the
            // copies it adds: a log taken below it left compaction idle until writers filled it again (a fifth of the
            // time in the uniform soak), and the next compaction would start on younger records, more of them live.
            range = Math.Min(range, LimitBytes(limitRatio, live) - (long)(ratio * live) - ExpectedCopies(live, range));
        }

        long until = Math.Min(head, (begin + Math.Max(minBytes, range) + pageMask) & ~pageMask);
        return until > begin ? until : null;
    }

    /// <summary>
    /// The log size above which writers wait while a compaction to <paramref name="until"/> runs: that of a log whose
    /// part on the device is <paramref name="limitRatio"/> times the live data (<see cref="LimitBytes"/>), less what the
    /// compaction is expected to copy (writers may add as much as it copies: see <see cref="Log.HybridLog.PauseHold"/>),
    /// but never below what compaction cannot go under (the memory's pages and the minimum), or no limit.
    /// </summary>
    /// <remarks>
    /// The expected copies: what the last compaction copied, or before the first, the range's share of the live data.
    /// A limit that left them out let the log pass it by a compaction's copies: 2.9x the live data at a limit of 2.5x,
    /// when the first compaction after loading a zipf soak's keys copied a third of them.
    /// </remarks>
    private long WriterLimit(double limitRatio, long minBytes, long until)
    {
        long live = LiveBytesNow();
        if (limitRatio <= 0 || live < 0)
        {
            return long.MaxValue;
        }

        return Math.Max(LimitBytes(limitRatio, live) - ExpectedCopies(live, until - _engine.Log.BeginAddress),
            MemoryBytes + minBytes);
    }

    /// <summary>What a compaction of <paramref name="range"/> bytes is expected to copy: what the last one copied, or
    /// before the first, the range's share of the <paramref name="live"/> data.</summary>
    private long ExpectedCopies(long live, long range)
    {
        long size = Math.Max(1, _engine.Log.TailAddress - _engine.Log.BeginAddress);
        return Interlocked.Read(ref _compactions) > 0 ? Interlocked.Read(ref _lastBytesCopied)
            : (long)((double)live * Math.Min(range, size) / size);
    }

    /// <summary>The size of a log whose part on the device, the disk it takes, is <paramref name="limitRatio"/> times
    /// <paramref name="live"/>: the memory's pages are above it.</summary>
    private long LimitBytes(double limitRatio, long live) => (long)(limitRatio * live) + MemoryBytes;

    private long MemoryBytes => (long)_engine.Log.BufferPages * _engine.Log.PageSize;

    // Set by the automatic loop when it waits for a page turn with nothing to compact; true until it first looks.
    private bool _automaticIdle = true;

    private long _indexCountedAt;
    private long _indexCountedTail;
    private long _indexLiveBytes = -1;
    private bool _indexLiveGrew;

    /// <summary>
    /// The live data as best known now: with fixed-size records, the index's entries times the record size (a scan of
    /// the index, counted again once a second, and while the count keeps rising, also once the log has grown by half
    /// the live data last counted); otherwise what the last compaction kept, or -1 before one ran.
    /// </summary>
    /// <remarks>
    /// A store being filled has many more keys a second later: a count that old made the policy compact records that
    /// were all live, and hold writers at a limit computed from it. Counted again as it grows, the estimate is never
    /// below two thirds of the log while every record is live, so the default ratio of 2 is not reached.
    /// </remarks>
    private long LiveBytesNow()
    {
        if (Log.LogRecord<TKey, TValue>.IsVariable)
        {
            return EstimatedLiveBytes;
        }

        long now = Environment.TickCount64;
        long tail = _engine.Log.TailAddress;
        if ((_indexLiveBytes < 0 || now - _indexCountedAt >= 1000 ||
             (_indexLiveGrew && tail - _indexCountedTail > _indexLiveBytes / 2)) &&
            _engine.Index.TryCountEntriesFrom(_engine.Log.BeginAddress) is long entries)
        {
            long live = entries * Log.LogRecord<TKey, TValue>.FixedSize;
            _indexLiveGrew = live > _indexLiveBytes;
            _indexCountedAt = now;
            _indexCountedTail = tail;
            _indexLiveBytes = live;
        }

        return _indexLiveBytes;
    }

    /// <summary>Stops the background work and waits for a compaction in progress (cancelled by the store's stopping
    /// token) to end.</summary>
    public void Dispose()
    {
        _automatic.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
        _oneAtATime.Wait();
        _truncating.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
        _compactor?.Dispose();
        _thread?.Dispose();
        _oneAtATime.Dispose();
    }
}
