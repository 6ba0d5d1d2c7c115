using System.Diagnostics;
using HybridKV.Diagnostics;
using HybridKV.Operations;
using Microsoft.Extensions.Logging;

namespace HybridKV.Compaction;

/// <summary>
/// The log's lifecycle on the device: compactions one at a time (manual or by policy), each copying the live records
/// of the oldest part forward, then moving the begin address (segments go once no kept checkpoint needs them) and
/// emptying index entries that led only below it.
/// </summary>
/// <remarks>
/// The policy (<see cref="StoreSettings.LogCompactionRatio"/>): once the log is at least
/// <see cref="StoreSettings.LogCompactionMinBytes"/>, compact when it is more than the ratio times the live data
/// estimated by the last compaction (before the first, at once), the older half of what is on the device each time.
/// A log that is all live is copied once and then left until it doubles, so the cost stays bounded.
/// </remarks>
internal sealed class LogCompaction<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly Func<long, CancellationToken, Task<long>> _shiftBeginAddress;
    private readonly ILogger _logger;
    private readonly CancellationToken _stopping;
    private readonly SemaphoreSlim _oneAtATime = new(1, 1);
    private LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions>? _compactor;
    private Task _automatic = Task.CompletedTask;
    private long _estimatedLiveBytes = -1;
    private long _compactions;
    private long _bytesCopied;
    private long _bytesReclaimed;

    public LogCompaction(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        Func<long, CancellationToken, Task<long>> shiftBeginAddress, ILogger logger, CancellationToken stopping)
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

    /// <summary>The background loop (tests).</summary>
    internal Task Automatic => _automatic;

    /// <summary>The live data the last compaction estimated, or -1 before the first.</summary>
    public long EstimatedLiveBytes => Interlocked.Read(ref _estimatedLiveBytes);

    /// <summary>
    /// Compacts [begin, <paramref name="untilAddress"/>) rounded down to a page boundary, which must be at most the
    /// head address (the caller checked).
    /// </summary>
    public async Task<CompactionResult> CompactAsync(long untilAddress, CancellationToken cancellationToken)
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

            var started = Stopwatch.StartNew();
            _compactor ??= new LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
                _engine, _engine.LogCompactionEntry);
            CompactionResult result = await _compactor.CopyLiveRecordsAsync(from, until, token).ConfigureAwait(false);
            // A running scan may hold the begin address lower; the copies above it are then merely early.
            until = await _shiftBeginAddress(until, token).ConfigureAwait(false);
            result = result with { UntilAddress = until };
            if (until <= from)
            {
                return result;
            }

            long reclaimed = _engine.Index.ReclaimEntriesBelow(until);
            long range = until - from;
            long tail = _engine.Log.TailAddress;
            // The range's live share, applied to the whole log: what the next compaction may expect to keep.
            Interlocked.Exchange(ref _estimatedLiveBytes,
                (long)((double)result.BytesCopied / range * Math.Max(range, tail - from)));
            Interlocked.Increment(ref _compactions);
            Interlocked.Add(ref _bytesCopied, result.BytesCopied);
            Interlocked.Add(ref _bytesReclaimed, range);
            StoreLog.Compacted(_logger, from, until, result.RecordsCopied, result.BytesCopied, result.RecordsExamined,
                result.TombstonesDropped, reclaimed, started.Elapsed.TotalMilliseconds);
            return result with { IndexEntriesReclaimed = reclaimed };
        }
        finally
        {
            _oneAtATime.Release();
        }
    }

    /// <summary>Starts compacting by policy in the background, woken by page turns.</summary>
    public void StartAutomatic(double ratio, long minBytes)
    {
        _automatic = Task.Run(() => RunAutomaticAsync(ratio, minBytes));
    }

    private async Task RunAutomaticAsync(double ratio, long minBytes)
    {
        while (!_stopping.IsCancellationRequested)
        {
            Task turned = _engine.Log.PageTurned;
            if (NextCompactionUntil(ratio, minBytes) is long until)
            {
                try
                {
                    await CompactAsync(until, CancellationToken.None).ConfigureAwait(false);
                }
                catch (OperationCanceledException) when (_stopping.IsCancellationRequested)
                {
                    return;
                }
#pragma warning disable CA1031 // Logged; the store goes on and the next trigger tries again.
                catch (Exception error)
#pragma warning restore CA1031
                {
                    StoreLog.CompactionFailed(_logger, error);
                }
            }

            try
            {
                await turned.WaitAsync(_stopping).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }

    /// <summary>Where the policy would compact to now, or null if not yet.</summary>
    internal long? NextCompactionUntil(double ratio, long minBytes)
    {
        long begin = _engine.Log.BeginAddress;
        long size = _engine.Log.TailAddress - begin;
        long live = EstimatedLiveBytes;
        if (size < minBytes || (live >= 0 && size <= ratio * live))
        {
            return null;
        }

        long onDevice = _engine.Log.HeadAddress - begin;
        long until = (begin + (onDevice / 2)) & ~(_engine.Log.PageSize - 1L);
        return until > begin ? until : null;
    }

    /// <summary>Stops the background work and waits for a compaction in progress (cancelled by the store's stopping
    /// token) to end.</summary>
    public void Dispose()
    {
        _automatic.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
        _oneAtATime.Wait();
        _compactor?.Dispose();
        _oneAtATime.Dispose();
    }
}
