using HybridKV.Utilities;
using System.Diagnostics;
using System.Text.Json;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Log;
using HybridKV.Operations;
using HybridKV.Sessions;
using Microsoft.Extensions.Logging;

namespace HybridKV.Checkpoints;

/// <summary>
/// Takes CPR checkpoints (CPR §6): an optional fuzzy index checkpoint, then the log commit, whose phases
/// (PREPARE → IN-PROGRESS → WAIT-PENDING → WAIT-FLUSH → REST) advance by epoch trigger actions, so that sessions
/// learn of each phase at their next operation and none is ever stopped. One checkpoint runs at a time; a second
/// request waits for the first to finish and then takes its own, so that it covers everything issued before it.
/// </summary>
internal sealed class CheckpointStateMachine<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly SessionRegistry _sessions;
    private readonly CheckpointCatalog _catalog;
    private readonly StorageDevice _device;
    private readonly StoreIdentity _identity;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _oneAtATime = new(1, 1);

    // The work of each checkpoint kind and mode; the phases are this class's.
    private readonly IndexCapture _index;
    private readonly FoldOverCapture _foldOver;
    private readonly SnapshotCapture _snapshot;
    private readonly CheckpointModeChoice _modeChoice;
    private readonly CheckpointRetention _retention;
    private int _started;

    public CheckpointStateMachine(
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        SessionRegistry sessions,
        CheckpointCatalog catalog,
        StorageDevice device,
        int checkpointsToKeep,
        StoreIdentity identity,
        ILogger logger)
    {
        _engine = engine;
        _sessions = sessions;
        _catalog = catalog;
        _device = device;
        _logger = logger;
        _identity = identity;
        _index = new IndexCapture(engine.Log, engine.Epoch, () => engine.Index);
        _foldOver = new FoldOverCapture(engine.Log);
        _snapshot = new SnapshotCapture(engine.Log, device, engine.Epoch, engine.MaintenanceEntry, engine.Snapshot);
        _modeChoice = new CheckpointModeChoice(() => engine.BytesReadByOperations, engine.Log);
        _retention = new CheckpointRetention(catalog, device, checkpointsToKeep, identity.LogId, CheckpointMetadata.JsonOptions,
            logger);
    }

    /// <summary>The store and log checkpoints are written for.</summary>
    public StoreIdentity Identity => _identity;

    /// <summary>Checkpoints committed, by mode.</summary>
    public CheckpointCounts Committed { get; } = new();

    /// <summary>Whether this store has started any checkpoint (recovery is then no longer allowed).</summary>
    public bool HasTakenAny => Volatile.Read(ref _started) != 0;

    /// <summary>Whether a checkpoint is being taken.</summary>
    public bool IsRunning => _oneAtATime.CurrentCount == 0;

    /// <summary>Recovery hands over the index checkpoint that later log-only checkpoints refer to.</summary>
    public void OnRecovered(IndexCheckpointMetadata? index) => _index.OnRecovered(index);

    /// <summary>
    /// Deletes the log device's whole segments below <paramref name="beginAddress"/> that no committed checkpoint
    /// needs either.
    /// </summary>
    public async Task TruncateLogAsync(long beginAddress, CancellationToken cancellationToken)
    {
        // Not while a checkpoint runs: it recorded the begin address when it started, and the segments from there must
        // stay until it has committed (and then until retention lets it go).
        await _oneAtATime.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await _retention.TruncateLogAsync(beginAddress, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _oneAtATime.Release();
        }
    }

    public async Task<Guid> TakeAsync(CheckpointKind kind, CheckpointMode mode, CancellationToken cancellationToken)
    {
        Volatile.Write(ref _started, 1);
        await _oneAtATime.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            // No index resize runs during a checkpoint (one waits for the other): the index copy is of one table, and
            // every record below the commit's final address was linked into a table no larger than the one recorded.
            using (await _engine.Index.LockStructureAsync(cancellationToken).ConfigureAwait(false))
            {
                return await RunAsync(kind, mode, cancellationToken).ConfigureAwait(false);
            }
        }
        finally
        {
            _oneAtATime.Release();
        }
    }

    private async Task<Guid> RunAsync(CheckpointKind kind, CheckpointMode requested, CancellationToken cancellationToken)
    {
        var total = Stopwatch.StartNew();
        // As the checkpoint starts: compaction may move the begin address while it runs, but the copies of the records
        // it drops are in this checkpoint only if they were made before it started (CPR §6.2.1, by version and address).
        long beginAddress = _engine.Log.BeginAddress;
        CheckpointWriter writer = _catalog.Begin();
        long version = _engine.State.Version;
        CheckpointModeChoice.Choice choice = _modeChoice.Resolve(requested);
        CheckpointMode mode = choice.Mode;
        if (requested == CheckpointMode.Auto)
        {
            CheckpointLog.ModeChosen(_logger, writer.Token, mode, choice.BytesReadSinceLast, choice.SnapshotBytes);
        }

        CheckpointLog.Started(_logger, writer.Token, version, kind, mode);
        var phase = Stopwatch.StartNew();
        IndexCheckpointMetadata? index = await _index.CaptureAsync(kind, writer, cancellationToken).ConfigureAwait(false);
        if (kind == CheckpointKind.Full)
        {
            CheckpointLog.Phase(_logger, writer.Token, "index", phase.Elapsed.TotalMilliseconds);
        }

        // Past this point the sessions move to the next version, which cannot be undone: the commit runs to the end.
        cancellationToken.ThrowIfCancellationRequested();
        LogCapture capture = mode == CheckpointMode.FoldOver ? _foldOver : _snapshot;
        LogCommit commit = await CommitLogAsync(writer, version, capture).ConfigureAwait(false);

        phase.Restart();
        IReadOnlyList<SessionCommitMetadata> table = _sessions.TableWith(commit.Points);
        var metadata = new CheckpointMetadata(
            CheckpointMetadata.CurrentFormat, version, kind, mode, beginAddress, commit.StartAddress,
            commit.FinalAddress, commit.SnapshotStartAddress, index, table, _identity, _engine.Index.BucketCount);
        await writer.CommitAsync(JsonSerializer.SerializeToElement(metadata, CheckpointMetadata.JsonOptions), CancellationToken.None)
            .ConfigureAwait(false);
        CheckpointLog.Phase(_logger, writer.Token, "commit manifest", phase.Elapsed.TotalMilliseconds);
        _index.OnCommitted(kind, index);
        Committed.OnCommitted(mode);
        _sessions.OnCommitted(table, commit.Points);
        CheckpointLog.Completed(_logger, writer.Token, version, commit.FinalAddress, table.Count,
            total.Elapsed.TotalMilliseconds);
        await _retention.ApplyAsync(_engine.Log.BeginAddress).ConfigureAwait(false);
        return writer.Token;
    }

    /// <summary>
    /// The log commit's phases (CPR §6.2): PREPARE, IN-PROGRESS, WAIT-PENDING, then WAIT-FLUSH, where the mode's
    /// <paramref name="capture"/> fixes the committed version's records where recovery will find them, and back to
    /// REST in the next version; then what the capture wrote is made durable.
    /// </summary>
    private async Task<LogCommit> CommitLogAsync(CheckpointWriter writer, long version, LogCapture capture)
    {
        long start = _engine.Log.TailAddress;
        // Published before the state leaves REST, so a session that sees the next phase sees this address too.
        _engine.CommitStartAddress = start;
        IReadOnlyList<SweptSession> points;
        long final;
        long snapshotStart;
        try
        {
            // PREPARE: sessions still run as v. Once all have seen it, IN-PROGRESS: each crosses its CPR point at its
            // next operation (or when it meets a v + 1 record). Once all have seen that, no operation of v is left.
            await AdvanceAsync(writer.Token, new SystemState(CprPhase.Prepare, version)).ConfigureAwait(false);
            // No session sees the last commit's WAIT-FLUSH any more, so none goes by how far its snapshot got.
            _engine.Snapshot.Reset();
            await AdvanceAsync(writer.Token, new SystemState(CprPhase.InProgress, version)).ConfigureAwait(false);

            var phase = Stopwatch.StartNew();
            _engine.State = new SystemState(CprPhase.WaitPending, version);
            await CrossEverySessionAsync(version + 1).ConfigureAwait(false);
            points = _sessions.CollectPoints(version + 1);
            CheckpointLog.PhaseOf(_logger, writer.Token, CprPhase.WaitPending, phase.Elapsed.TotalMilliseconds);

            phase.Restart();
            _engine.State = new SystemState(CprPhase.WaitFlush, version);
            // Wakes upserts that strict CPR held back.
            _engine.Log.SignalSpace();
            final = _engine.Log.TailAddress;
            snapshotStart = await capture.CaptureAsync(writer, final).ConfigureAwait(false);
            CheckpointLog.PhaseOf(_logger, writer.Token, CprPhase.WaitFlush, phase.Elapsed.TotalMilliseconds);
        }
        finally
        {
            // Whatever happened, sessions are past the CPR point: they continue at rest in v + 1.
            _engine.State = new SystemState(CprPhase.Rest, version + 1);
        }

        // The version's records are captured: nothing below the final address changes in memory for it any more (a
        // fold-over made it read-only, a snapshot copied it), so updates go on in place while the copy and the log
        // reach the disk. The commit comes only after both.
        var durable = Stopwatch.StartNew();
        await writer.MakePartsDurableAsync().ConfigureAwait(false);
        await _device.FlushAsync().ConfigureAwait(false);
        CheckpointLog.Phase(_logger, writer.Token, "durable", durable.Elapsed.TotalMilliseconds);
        return new LogCommit(points, start, final, snapshotStart);
    }

    /// <summary>
    /// WAIT-PENDING (CPR §6.2.3). Relaxed CPR crosses every session at once. Strict CPR waits until each session has
    /// finished its pending operations of the committed version (sessions do that in CompletePending) and crossed;
    /// meanwhile, sessions already past their CPR point hold back their updates.
    /// </summary>
    private async Task CrossEverySessionAsync(long nextVersion)
    {
        bool strict = _engine.StrictCpr;
        while (true)
        {
            Task drained = _sessions.PendingDrained.NextSignal;
            if (_sessions.TryCrossAll(nextVersion, strict))
            {
                break;
            }

            await drained.WaitOrTimeoutAsync(TimeSpan.FromMilliseconds(100)).ConfigureAwait(false);
        }
    }

    private async Task AdvanceAsync(Guid token, SystemState state)
    {
        var phase = Stopwatch.StartNew();
        var allSeen = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _engine.State = state;
        _engine.Epoch.BumpCurrentEpoch(() => allSeen.TrySetResult());
        await allSeen.Task.ConfigureAwait(false);
        CheckpointLog.PhaseOf(_logger, token, state.Phase, phase.Elapsed.TotalMilliseconds);
    }

    /// <summary>Waits for a running checkpoint to finish and keeps any other from starting (store disposal).</summary>
    public void WaitUntilIdle() => _oneAtATime.Wait();

    public void Dispose()
    {
        _oneAtATime.Dispose();
    }

    private sealed record LogCommit(
        IReadOnlyList<SweptSession> Points,
        long StartAddress,
        long FinalAddress,
        long SnapshotStartAddress);
}
