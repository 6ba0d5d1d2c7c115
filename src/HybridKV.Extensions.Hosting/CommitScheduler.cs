using System.Diagnostics;
using HybridKV.Checkpoints;
using Microsoft.Extensions.Logging;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// Takes every checkpoint of a hosted store, one at a time, for three reasons: a commit asked for (group commit), the
/// periodic interval, and shutdown. A request joins the next checkpoint to start: the one starting at once when none
/// runs (after <see cref="HybridKVOptions.CommitDelay"/>), otherwise the one after the running one, which every request
/// arriving meanwhile shares. So under load one checkpoint acknowledges a whole batch, and a lone request waits about
/// one checkpoint. A periodic tick with nothing to make durable takes no checkpoint and logs nothing.
/// </summary>
internal sealed class CommitScheduler : IDisposable
{
    private readonly IHybridKVStore _store;
    private readonly HybridKVOptions _options;
    private readonly ILogger _logger;
    private readonly HostingMetrics _metrics;
    private readonly TimeProvider _time;
    private readonly object _gate = new();

    // Completed when a batch starts waiting while the loop sleeps: wakes it before the periodic interval is up.
    private TaskCompletionSource _wake = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _stopping = new();

    // The requests waiting for the next checkpoint to start; null when none waits. Replaced as that checkpoint starts.
    private TaskCompletionSource? _nextBatch;

    // Set once the scheduler stops: later requests are refused.
    private bool _stopped;
    private Task _loop = Task.CompletedTask;

    // When (a _time timestamp) the current periodic interval started: at start, after each checkpoint, after each idle
    // tick. Only the loop touches it.
    private long _intervalStart;

    // When the last full checkpoint started; null before the first. Only the loop (and the final checkpoint after it) touch it.
    private long? _lastFullTimestamp;
    private Exception? _lastFailure;

    public CommitScheduler(IHybridKVStore store, HybridKVOptions options, ILogger logger, HostingMetrics metrics,
        TimeProvider time)
    {
        _store = store;
        _options = options;
        _logger = logger;
        _metrics = metrics;
        _time = time;
    }

    /// <summary>When the last checkpoint started that became durable (or the store was recovered); null before either.</summary>
    public DateTimeOffset? LastCommit =>
        Interlocked.Read(ref _lastCommitUtcTicks) is var ticks and not 0 ? new DateTimeOffset(ticks, TimeSpan.Zero) : null;

    // LastCommit's UTC ticks, 0 for none: one word, so that the health check never reads it torn.
    private long _lastCommitUtcTicks;

    /// <summary>Why the last checkpoint failed, or null if it succeeded (or none ran).</summary>
    public Exception? LastFailure => Volatile.Read(ref _lastFailure);

    /// <summary>The number of checkpoints started since start (counted as they start, so that a waiter woken by one sees it).</summary>
    public long CheckpointCount => Interlocked.Read(ref _checkpointCount);

    private long _checkpointCount;

    /// <summary>Starts the loop; with <paramref name="recovered"/>, recovery counts as the last commit.</summary>
    public void Start(bool recovered)
    {
        if (recovered)
        {
            Interlocked.Exchange(ref _lastCommitUtcTicks, _time.GetUtcNow().UtcTicks);
        }

        _intervalStart = _time.GetTimestamp();
        _loop = RunAsync(_stopping.Token);
    }

    /// <summary>
    /// Completes when a checkpoint that started after this call is durable: everything acknowledged before the call is
    /// then durable. Faults when that checkpoint fails.
    /// </summary>
    /// <exception cref="InvalidOperationException">The store is stopping.</exception>
    public Task RequestAsync()
    {
        lock (_gate)
        {
            if (_stopped)
            {
                throw new InvalidOperationException(
                    "The HybridKV store is stopping: its final checkpoint was taken or is being taken, and no commit " +
                    "can be requested any more.");
            }

            if (_nextBatch is null)
            {
                _nextBatch = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _wake.TrySetResult();
            }

            return _nextBatch.Task;
        }
    }

    /// <summary>
    /// Waits until <paramref name="durable"/> (a session's wait for its serial number) completes, asking for
    /// checkpoints until one holds it: one normally, a second when the first excluded the operation (still pending at
    /// its CPR point).
    /// </summary>
    public async Task WaitDurableAsync(Task durable, CancellationToken cancellationToken)
    {
        long started = _time.GetTimestamp();
        while (!durable.IsCompleted)
        {
            Task batch = RequestAsync();
            Task first = await Task.WhenAny(durable, batch).WaitAsync(cancellationToken).ConfigureAwait(false);
            if (first == batch && batch.IsFaulted)
            {
                // The checkpoint failed: the write is not durable, and the caller must not be told it is.
                await batch.ConfigureAwait(false);
            }
        }

        await durable.ConfigureAwait(false);
        _metrics.CommitWaited(_time.GetElapsedTime(started));
    }

    private async Task RunAsync(CancellationToken stopping)
    {
        try
        {
            while (true)
            {
                Task? wake = null;
                lock (_gate)
                {
                    if (_nextBatch is null)
                    {
                        _wake = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                        wake = _wake.Task;
                    }
                }

                TimeSpan untilPeriodic = _options.CheckpointInterval - _time.GetElapsedTime(_intervalStart);
                if (wake is not null && untilPeriodic > TimeSpan.Zero)
                {
                    await WaitAsync(wake, untilPeriodic, stopping).ConfigureAwait(false);
                }

                if (_options.CommitDelay > TimeSpan.Zero && Volatile.Read(ref _nextBatch) is not null)
                {
                    await Task.Delay(_options.CommitDelay, _time, stopping).ConfigureAwait(false);
                }

                TaskCompletionSource? batch;
                lock (_gate)
                {
                    batch = _nextBatch;
                    _nextBatch = null;
                }

                if (batch is null)
                {
                    if (_time.GetElapsedTime(_intervalStart) < _options.CheckpointInterval)
                    {
                        // A wake whose batch an earlier checkpoint took: nothing to do.
                        continue;
                    }

                    if (!_store.HasUncommittedOperations)
                    {
                        // An idle tick: everything is durable already. Nothing to do, nothing to log.
                        _intervalStart = _time.GetTimestamp();
                        Interlocked.Increment(ref _idleTicks);
                        continue;
                    }
                }

                await CheckpointAsync(batch, batch is null ? CheckpointReason.Periodic : CheckpointReason.Requested)
                    .ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException) when (stopping.IsCancellationRequested)
        {
        }
    }

    /// <summary>Waits for a request or for the periodic interval, whichever comes first (the timer is then dropped).</summary>
    private async Task WaitAsync(Task wake, TimeSpan untilPeriodic, CancellationToken stopping)
    {
        using var tick = CancellationTokenSource.CreateLinkedTokenSource(stopping);
        Task delay = Task.Delay(untilPeriodic, _time, tick.Token);
        await Task.WhenAny(wake, delay).ConfigureAwait(false);
        await tick.CancelAsync().ConfigureAwait(false);
        stopping.ThrowIfCancellationRequested();
    }

    // Periodic ticks that found nothing to commit: lets tests wait for one without timing.
    private long _idleTicks;

    /// <summary>Periodic ticks that found nothing to commit, and so took no checkpoint and logged nothing.</summary>
    internal long IdleTicks => Interlocked.Read(ref _idleTicks);

    /// <summary>Takes one checkpoint and tells <paramref name="batch"/> how it went; never throws.</summary>
    private async Task<bool> CheckpointAsync(TaskCompletionSource? batch, CheckpointReason reason)
    {
        bool full = _lastFullTimestamp is not { } lastFull ||
            _time.GetElapsedTime(lastFull) >= _options.IndexCheckpointInterval;
        CheckpointKind kind = full ? CheckpointKind.Full : CheckpointKind.LogOnly;
        long tailBefore = _store.TailAddress;
        long started = _time.GetTimestamp();
        Interlocked.Increment(ref _checkpointCount);
        try
        {
            await _store.TakeCheckpointAsync(kind, _options.CheckpointMode, CancellationToken.None).ConfigureAwait(false);
        }
#pragma warning disable CA1031 // The failure goes to the waiters, the log, the health check and the meters.
        catch (Exception error)
#pragma warning restore CA1031
        {
            Volatile.Write(ref _lastFailure, error);
            _intervalStart = _time.GetTimestamp();
            _metrics.CheckpointFailed(reason);
            HostingLog.CheckpointFailed(_logger, reason, error);
            batch?.TrySetException(error);
            return false;
        }

        TimeSpan took = _time.GetElapsedTime(started);
        _intervalStart = started;
        if (full)
        {
            _lastFullTimestamp = started;
        }

        Interlocked.Exchange(ref _lastCommitUtcTicks, (_time.GetUtcNow() - took).UtcTicks);
        Volatile.Write(ref _lastFailure, null);
        long bytes = Math.Max(0, _store.TailAddress - tailBefore) + (full ? _store.IndexBucketCount * 64 : 0);
        _metrics.CheckpointTaken(reason, kind, took, bytes);
        HostingLog.CheckpointTaken(_logger, reason, kind, took.TotalMilliseconds);
        batch?.TrySetResult();
        return true;
    }

    /// <summary>Stops the loop without a final checkpoint (the host is disposed without having been stopped).</summary>
    public void Abandon()
    {
        lock (_gate)
        {
            _stopped = true;
        }

        _stopping.Cancel();
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        _stopping.Dispose();
    }

    /// <summary>
    /// Stops the loop (waiting for a checkpoint under way) and takes the final checkpoint if anything is not durable
    /// yet or a request waits; later requests are refused.
    /// </summary>
    /// <returns>Whether the store is now fully committed.</returns>
    public async Task<bool> StopAsync(CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            _stopped = true;
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        await _loop.WaitAsync(cancellationToken).ConfigureAwait(false);
        TaskCompletionSource? batch;
        lock (_gate)
        {
            batch = _nextBatch;
            _nextBatch = null;
        }

        if (batch is null && !_store.HasUncommittedOperations)
        {
            return true;
        }

        return await CheckpointAsync(batch, CheckpointReason.Shutdown).WaitAsync(cancellationToken).ConfigureAwait(false);
    }
}

/// <summary>Why a hosted store took a checkpoint (a tag of its meters and logs).</summary>
internal enum CheckpointReason
{
    /// <summary>The periodic interval passed with operations not yet durable.</summary>
    Periodic,

    /// <summary>A durable write or <c>CommitAsync</c> asked for it.</summary>
    Requested,

    /// <summary>The host is stopping.</summary>
    Shutdown,
}
