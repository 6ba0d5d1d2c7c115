using System.Diagnostics;
using System.Text.Json;
using System.Text.Json.Serialization;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Epochs;
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
    internal static readonly JsonSerializerOptions JsonOptions = new(JsonSerializerDefaults.Web)
    {
        Converters = { new JsonStringEnumConverter() },
    };

    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly SessionRegistry _sessions;
    private readonly CheckpointCatalog _catalog;
    private readonly StorageDevice _device;
    private readonly LogLayoutMetadata _layout;
    private readonly int _checkpointsToKeep;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _oneAtATime = new(1, 1);

    // The store's maintenance row in the epoch table, for copying frames into a snapshot.
    private readonly int _epochEntry;

    // The index checkpoint that log-only checkpoints refer to.
    private IndexCheckpointMetadata? _lastIndex;
    private int _started;

    public CheckpointStateMachine(
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        SessionRegistry sessions,
        CheckpointCatalog catalog,
        StorageDevice device,
        int checkpointsToKeep,
        ILogger logger)
    {
        _engine = engine;
        _sessions = sessions;
        _catalog = catalog;
        _device = device;
        _checkpointsToKeep = checkpointsToKeep;
        _logger = logger;
        _layout = new LogLayoutMetadata(
            BitOperationsLog2(engine.Log.PageSize), LogRecord<TKey, TValue>.LayoutRecordSize,
            LogRecord<TKey, TValue>.LayoutKeySize, LogRecord<TKey, TValue>.LayoutValueSize);
        _epochEntry = engine.MaintenanceEntry;
    }

    /// <summary>The record layout checkpoints are written with.</summary>
    public LogLayoutMetadata Layout => _layout;

    /// <summary>Whether this store has started any checkpoint (recovery is then no longer allowed).</summary>
    public bool HasTakenAny => Volatile.Read(ref _started) != 0;

    /// <summary>Whether a checkpoint is being taken.</summary>
    public bool IsRunning => _oneAtATime.CurrentCount == 0;

    /// <summary>Recovery hands over the index checkpoint that later log-only checkpoints refer to.</summary>
    public void OnRecovered(IndexCheckpointMetadata? index) => _lastIndex = index;

    public async Task<Guid> TakeAsync(CheckpointKind kind, CheckpointMode mode, CancellationToken cancellationToken)
    {
        Volatile.Write(ref _started, 1);
        await _oneAtATime.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return await RunAsync(kind, mode, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _oneAtATime.Release();
        }
    }

    private async Task<Guid> RunAsync(CheckpointKind kind, CheckpointMode mode, CancellationToken cancellationToken)
    {
        var total = Stopwatch.StartNew();
        CheckpointWriter writer = _catalog.Begin();
        long version = _engine.State.Version;
        CheckpointLog.Started(_logger, writer.Token, version, kind, mode);
        IndexCheckpointMetadata? index = kind == CheckpointKind.Full
            ? await WriteIndexAsync(writer, cancellationToken).ConfigureAwait(false)
            : _lastIndex;

        // Past this point the sessions move to the next version, which cannot be undone: the commit runs to the end.
        cancellationToken.ThrowIfCancellationRequested();
        LogCommit commit = await CommitLogAsync(writer, version, mode).ConfigureAwait(false);

        var phase = Stopwatch.StartNew();
        IReadOnlyList<SessionCommitMetadata> table = _sessions.TableWith(commit.Points);
        var metadata = new CheckpointMetadata(
            CheckpointMetadata.CurrentFormat, version, kind, mode, _engine.Log.BeginAddress, commit.StartAddress,
            commit.FinalAddress, commit.SnapshotStartAddress, index, table, _layout);
        await writer.CommitAsync(JsonSerializer.SerializeToElement(metadata, JsonOptions), CancellationToken.None)
            .ConfigureAwait(false);
        CheckpointLog.Phase(_logger, writer.Token, "commit manifest", phase.Elapsed.TotalMilliseconds);
        if (kind == CheckpointKind.Full)
        {
            _lastIndex = index;
        }

        _sessions.OnCommitted(table, commit.Points);
        CheckpointLog.Completed(_logger, writer.Token, version, commit.FinalAddress, table.Count,
            total.Elapsed.TotalMilliseconds);
        await ApplyRetentionAsync().ConfigureAwait(false);
        return writer.Token;
    }

    /// <summary>
    /// The fuzzy index checkpoint (CPR §6.3). The start address is taken, then every operation that might have
    /// allocated below it is waited out, so that each of their records is either linked in the copied index or found
    /// by the replay from the start address.
    /// </summary>
    private async Task<IndexCheckpointMetadata> WriteIndexAsync(CheckpointWriter writer, CancellationToken cancellationToken)
    {
        var phase = Stopwatch.StartNew();
        long start = _engine.Log.TailAddress;
        await _engine.Epoch.WaitUntilSafeAsync(_engine.Epoch.CurrentEpoch, cancellationToken).ConfigureAwait(false);
        await writer.WritePartAsync(CheckpointMetadata.IndexPart,
            (stream, token) => _engine.Index.WriteCheckpointAsync(stream, token), cancellationToken).ConfigureAwait(false);
        long end = _engine.Log.TailAddress;
        CheckpointLog.Phase(_logger, writer.Token, "index", phase.Elapsed.TotalMilliseconds);
        return new IndexCheckpointMetadata(writer.Token, start, end);
    }

    private async Task<LogCommit> CommitLogAsync(CheckpointWriter writer, long version, CheckpointMode mode)
    {
        long start = _engine.Log.TailAddress;
        // Published before the state leaves REST, so a session that sees the next phase sees this address too.
        _engine.CommitStartAddress = start;
        try
        {
            // PREPARE: sessions still run as v. Once all have seen it, IN-PROGRESS: each crosses its CPR point at its
            // next operation (or when it meets a v + 1 record). Once all have seen that, no operation of v is left.
            await AdvanceAsync(writer.Token, new SystemState(CprPhase.Prepare, version)).ConfigureAwait(false);
            await AdvanceAsync(writer.Token, new SystemState(CprPhase.InProgress, version)).ConfigureAwait(false);

            var phase = Stopwatch.StartNew();
            _engine.State = new SystemState(CprPhase.WaitPending, version);
            await CrossEverySessionAsync(version + 1).ConfigureAwait(false);
            IReadOnlyList<SweptSession> points = _sessions.CollectPoints(version + 1);
            CheckpointLog.PhaseOf(_logger, writer.Token, CprPhase.WaitPending, phase.Elapsed.TotalMilliseconds);

            phase.Restart();
            _engine.State = new SystemState(CprPhase.WaitFlush, version);
            // Wakes upserts that strict CPR held back.
            _engine.Log.SignalSpace();
            long final = _engine.Log.TailAddress;
            long snapshotStart = mode == CheckpointMode.FoldOver
                ? await FoldOverAsync(final).ConfigureAwait(false)
                : await WriteSnapshotAsync(writer, final).ConfigureAwait(false);
            await _device.FlushAsync().ConfigureAwait(false);
            CheckpointLog.PhaseOf(_logger, writer.Token, CprPhase.WaitFlush, phase.Elapsed.TotalMilliseconds);
            return new LogCommit(points, start, final, snapshotStart);
        }
        finally
        {
            // Whatever happened, sessions are past the CPR point: they continue at rest in v + 1.
            _engine.State = new SystemState(CprPhase.Rest, version + 1);
        }
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

            await drained.WaitAsync(TimeSpan.FromMilliseconds(100)).ContinueWith(static _ => { },
                CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default)
                .ConfigureAwait(false);
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

    /// <summary>Fold-over (CPR §6.2.4): the read-only offset moves to the tail, which flushes every v record.</summary>
    private async Task<long> FoldOverAsync(long final)
    {
        _engine.Log.ShiftReadOnlyAddress(final, LightEpoch.NoEntry);
        await _engine.Log.WaitForFlushAsync(final, CancellationToken.None).ConfigureAwait(false);
        return final;
    }

    /// <summary>
    /// Snapshot (CPR App. D): the log device already holds (or is being sent) everything below the safe read-only
    /// offset; the pages from there to the tail are copied into the checkpoint's snapshot part.
    /// </summary>
    private async Task<long> WriteSnapshotAsync(CheckpointWriter writer, long final)
    {
        int pageSize = _engine.Log.PageSize;
        long snapshotStart = Math.Min(_engine.Log.SafeReadOnlyAddress, final) & ~(long)(pageSize - 1);
        await _engine.Log.WaitForFlushAsync(snapshotStart, CancellationToken.None).ConfigureAwait(false);
        using var buffer = new AlignedBuffer(pageSize, _device.SectorSize);
        await writer.WritePartAsync(CheckpointMetadata.SnapshotPart, async (stream, token) =>
        {
            for (long page = snapshotStart; page < final; page += pageSize)
            {
                int length = (int)Math.Min(pageSize, final - page);
                if (!CopyFromMemory(page, buffer.Memory.Span[..length]))
                {
                    // Evicted since: below the head, so on the device, and v records do not change any more.
                    await _device.ReadAsync(page, buffer.Memory[..pageSize], token).ConfigureAwait(false);
                }

                await stream.WriteAsync(buffer.Memory[..length], token).ConfigureAwait(false);
            }
        }, CancellationToken.None).ConfigureAwait(false);
        return snapshotStart;
    }

    private bool CopyFromMemory(long address, Span<byte> destination)
    {
        _engine.Epoch.Protect(_epochEntry);
        try
        {
            return _engine.Log.TryCopyFromMemory(address, destination, _epochEntry);
        }
        finally
        {
            _engine.Epoch.Unprotect(_epochEntry);
        }
    }

    /// <summary>
    /// Keeps the newest checkpoints (and the index checkpoints they refer to), deletes the rest and any interrupted
    /// checkpoint, then lets the device drop log segments that no kept checkpoint and no live record needs.
    /// </summary>
    private async Task ApplyRetentionAsync()
    {
        if (_checkpointsToKeep <= 0)
        {
            return;
        }

        // Inside the one-at-a-time gate, so no checkpoint is being written: leftovers of interrupted ones go too.
        IReadOnlyList<Guid> deleted = await _catalog.ApplyRetentionAsync(_checkpointsToKeep, deleteUncommitted: true,
            manifest => ReadMetadata(manifest)?.Index is { } index ? [index.Token] : []).ConfigureAwait(false);
        foreach (Guid token in deleted)
        {
            CheckpointLog.Deleted(_logger, token);
        }

        await TruncateLogAsync(_engine.Log.BeginAddress, CancellationToken.None).ConfigureAwait(false);
    }

    /// <summary>
    /// Deletes the log device's whole segments below <paramref name="beginAddress"/> that no committed checkpoint
    /// needs either.
    /// </summary>
    public async Task TruncateLogAsync(long beginAddress, CancellationToken cancellationToken)
    {
        long neededFrom = Math.Min(beginAddress, await OldestNeededAddressAsync(cancellationToken).ConfigureAwait(false));
        long segmentStart = neededFrom & ~(_device.SegmentSize - 1);
        if (segmentStart > _device.BeginAddress)
        {
            await _device.TruncateUntilAsync(segmentStart, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>The lowest begin address of any committed checkpoint (<see cref="long.MaxValue"/> with none): the log
    /// device must keep everything from there.</summary>
    public async Task<long> OldestNeededAddressAsync(CancellationToken cancellationToken)
    {
        long oldest = long.MaxValue;
        foreach (CheckpointManifest manifest in await _catalog.ListAsync(cancellationToken).ConfigureAwait(false))
        {
            // A checkpoint whose metadata cannot be read is never recovered, so it needs nothing.
            oldest = Math.Min(oldest, ReadMetadata(manifest)?.BeginAddress ?? long.MaxValue);
        }

        return oldest;
    }

    private static CheckpointReferences? ReadMetadata(CheckpointManifest manifest)
    {
        try
        {
            return manifest.Metadata.Deserialize<CheckpointReferences>(JsonOptions);
        }
        catch (JsonException)
        {
            return null;
        }
    }

    private static int BitOperationsLog2(int value) => System.Numerics.BitOperations.Log2((uint)value);

    /// <summary>Waits for a running checkpoint to finish and keeps any other from starting (store disposal).</summary>
    public void WaitUntilIdle() => _oneAtATime.Wait();

    public void Dispose()
    {
        _oneAtATime.Dispose();
    }

    /// <summary>What retention needs of a checkpoint's metadata, read without its session table.</summary>
    private sealed record CheckpointReferences(long BeginAddress, IndexCheckpointMetadata? Index);

    private sealed record LogCommit(
        IReadOnlyList<SweptSession> Points,
        long StartAddress,
        long FinalAddress,
        long SnapshotStartAddress);
}
