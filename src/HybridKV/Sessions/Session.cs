using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Epochs;
using HybridKV.Operations;
using HybridKV.Utilities;

namespace HybridKV.Sessions;

/// <summary>
/// A logical thread of operations on a store (FASTER §2.5, CPR §2): used by one caller at a time, but not tied to an
/// OS thread, so it may continue on another thread after an <c>await</c>. Each operation holds epoch protection only
/// for its own synchronous stretch; operations that cannot finish at once (a record on the device, an RMW in the
/// fuzzy region) return <see cref="Status.Pending"/> and are finished by <see cref="CompletePending"/>, which reports
/// them to the completion callbacks.
/// </summary>
/// <remarks>A session is not thread-safe: never call it from two threads at once.</remarks>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private static readonly TimeSpan RecheckInterval = TimeSpan.FromMilliseconds(50);

    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> _store;
    private readonly LightEpoch _epoch;

    // Operations to retry now: fuzzy-region RMWs, operations that waited for log space, and finished device reads.
    private readonly Queue<PendingOperation<TKey, TInput, TOutput, TContext>> _ready = new();

    // Device reads finish on other threads; they land here and wake CompletePending.
    private readonly ConcurrentQueue<PendingOperation<TKey, TInput, TOutput, TContext>> _readsDone = new();
    private readonly AsyncSignal _readDone = new();
    private readonly Action<PendingOperation<TKey, TInput, TOutput, TContext>> _onReadDone;
    private int _readsInFlight;

    // Serial numbers, CPR version and commit points (CPR §2), shared with the checkpoint state machine.
    private readonly SessionCprState _cpr;

    // Owned by this session while >= 0; -1 once the session is disposed.
    private int _epochEntry;

    // Whether commits use strict CPR; fixed for the store's lifetime, kept here off the engine's settings.
    private readonly bool _strictCpr;

    // Refreshed each time the session enters protection: the epoch row, CPR version and global state it runs with.
    private SessionView _view;

    internal Session(
        HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> store,
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        int epochEntry,
        SessionCprState cpr)
    {
        _store = store;
        _engine = engine;
        _epoch = engine.Epoch;
        _epochEntry = epochEntry;
        _onReadDone = OnReadDone;
        _cpr = cpr;
        _strictCpr = engine.StrictCpr;
        _cpr.Committed = point => Committed?.Invoke(this, point);
    }

    /// <summary>The session's identity, given to <c>NewSession</c> or generated: the name its commit points are
    /// recorded under, and what <c>ContinueSession</c> takes after recovery.</summary>
    public Guid Id => _cpr.Id;

    /// <summary>
    /// Raised when a checkpoint holding some of this session's operations is durable, with the session's commit
    /// point in it. Raised on the thread that completed the checkpoint; keep handlers short.
    /// </summary>
    public event EventHandler<CommitPoint>? Committed;

    /// <summary>The newest commit point of this session that is durable (after recovery: the recovered one).</summary>
    public CommitPoint DurableCommitPoint => _cpr.Durable;

    /// <summary>
    /// Completes once every operation of this session up to <paramref name="serialNo"/> is part of a durable
    /// checkpoint. Operations excluded from one commit because they were pending are covered by a later one.
    /// </summary>
    /// <param name="serialNo">A serial number this session has issued, from 1 to <see cref="LastSerialNo"/>.</param>
    /// <param name="cancellationToken">Stops waiting; the checkpoint itself is not affected.</param>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open: the checkpoint could
    /// not pass this session while it waits.</exception>
    public Task WaitForCommitAsync(long serialNo, CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        if (serialNo < 1 || serialNo > LastSerialNo)
        {
            throw new ArgumentOutOfRangeException(nameof(serialNo), serialNo,
                $"Wait for a serial number this session has issued: from 1 to {LastSerialNo}.");
        }

        return _cpr.WaitForCommitAsync(serialNo, cancellationToken);
    }

    /// <summary>
    /// The serial number the next operation takes. Every operation (pending or not) takes one and increments it, so
    /// a session's operations are numbered in the order they were issued. A caller that numbers its own operations
    /// (a request id, a stream offset) may move it forward, never back.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is not greater than the last serial number used.</exception>
    public long NextSerialNo
    {
        get => _cpr.NextSerialNo;
        set
        {
            long next = _cpr.NextSerialNo;
            if (value < next)
            {
                throw new ArgumentOutOfRangeException(nameof(value), value,
                    $"Serial numbers only increase: the next one must be at least {next}.");
            }

            _cpr.NextSerialNo = value;
        }
    }

    /// <summary>The serial number of the last operation issued, or 0 before the first.</summary>
    public long LastSerialNo => _cpr.NextSerialNo - 1;

    /// <summary>The number of operations that returned <see cref="Status.Pending"/> and have not completed yet.</summary>
    public int PendingCount => _ready.Count + Volatile.Read(ref _readsInFlight) + _readsDone.Count;

    /// <summary>Reads a key with the default input.</summary>
    /// <returns><see cref="Status.Ok"/> and <paramref name="output"/> filled by a reader callback,
    /// <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/> when the record is on the device (the read
    /// completes in <see cref="CompletePending"/>, which hands the output to the completion callback).</returns>
    public Status Read(in TKey key, ref TOutput output) => Read(in key, default!, ref output, default!);

    /// <summary>Reads a key: a reader callback turns the value and <paramref name="input"/> into the output.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/> when the
    /// read finishes in <see cref="CompletePending"/> (the completion callback then receives the output).</returns>
    public Status Read(in TKey key, in TInput input, ref TOutput output, TContext context)
    {
        return ToStatus(TryReadOnce(in key, in input, ref output, context, awaited: false, TakeSerialNo(), out _));
    }

    /// <summary>
    /// Reads a key and, if its record is on the device, waits for it (blocking) so that the output is complete on
    /// return; the completion callback also runs. For readers whose output points at the caller's memory, which must
    /// not be written after the call returns.
    /// </summary>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    internal Status ReadAndWait(in TKey key, in TInput input, ref TOutput output, TContext context)
    {
        OperationStatus status = TryReadOnce(in key, in input, ref output, context, awaited: true, TakeSerialNo(),
            out PendingOperation<TKey, TInput, TOutput, TContext>? pending);
        if (pending is null)
        {
            return ToStatus(status);
        }

        Task<(Status Status, TOutput Output)> completion = pending.Completion!.Task;
        while (!completion.IsCompleted)
        {
            Task readDone = _readDone.NextSignal;
            Task logSpace = _engine.Log.SpaceSignal;
            bool progressed = ContinuePendingOnce(out bool waitingForSpace);
            if (!progressed && !completion.IsCompleted)
            {
                WaitUnprotected(waitingForSpace ? logSpace : readDone);
            }
        }

        (Status finalStatus, output) = completion.GetAwaiter().GetResult();
        return finalStatus;
    }

    /// <summary>Inserts or overwrites the value of a key. Never reads the device.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    public Status Upsert(in TKey key, in TValue value)
    {
        TakeSerialNo();
        OperationStatus status = TryUpsertOnce(in key, in value);
        while (status == OperationStatus.RetryLater)
        {
            // Taken before the next attempt: a change after it wakes the wait, one before it is seen by the attempt.
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryUpsertOnce(in key, in value);
            if (status == OperationStatus.RetryLater)
            {
                WaitUnprotected(logSpace);
            }
        }

        return ToStatus(status);
    }

    /// <summary>Read-modify-write with the default context.</summary>
    public Status RMW(in TKey key, in TInput input) => RMW(in key, in input, default!);

    /// <summary>
    /// Updates a key from its current value and <paramref name="input"/> (InitialUpdater if it has none, otherwise
    /// InPlaceUpdater or CopyUpdater).
    /// </summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when the update finishes in
    /// <see cref="CompletePending"/>.</returns>
    public Status RMW(in TKey key, in TInput input, TContext context)
    {
        long serialNo = TakeSerialNo();
        OperationStatus status = TryRMWOnce(in key, in input, context, awaited: false, serialNo, out _);
        while (status == OperationStatus.RetryLater)
        {
            // Taken before the next attempt: a change after it wakes the wait, one before it is seen by the attempt.
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryRMWOnce(in key, in input, context, awaited: false, serialNo, out _);
            if (status == OperationStatus.RetryLater)
            {
                WaitUnprotected(logSpace);
            }
        }

        return ToStatus(status);
    }

    /// <summary>Deletes a key with the default context.</summary>
    public Status Delete(in TKey key) => Delete(in key, default!);

    /// <summary>Deletes a key.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/> if the key did not exist, or
    /// <see cref="Status.Pending"/> when its record is on the device (finished in <see cref="CompletePending"/>).</returns>
    public Status Delete(in TKey key, TContext context)
    {
        long serialNo = TakeSerialNo();
        OperationStatus status = TryDeleteOnce(in key, context, awaited: false, serialNo, out _);
        while (status == OperationStatus.RetryLater)
        {
            // Taken before the next attempt: a change after it wakes the wait, one before it is seen by the attempt.
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryDeleteOnce(in key, context, awaited: false, serialNo, out _);
            if (status == OperationStatus.RetryLater)
            {
                WaitUnprotected(logSpace);
            }
        }

        return ToStatus(status);
    }

    /// <summary>
    /// Continues this session's pending operations, reporting each finished one to its completion callback.
    /// </summary>
    /// <param name="wait">Whether to keep going until every pending operation has finished. The wait blocks on device
    /// completions rather than spinning.</param>
    /// <returns><see langword="true"/> if no operation is pending any more.</returns>
    public bool CompletePending(bool wait = false)
    {
        ThrowIfDisposed();
        var spinner = new SpinWait();
        while (true)
        {
            if (_scopeOpen)
            {
                // A refresh point of the scope; also what lets a fuzzy-region operation's region become safe.
                RefreshScope();
            }

            Task readDone = _readDone.NextSignal;
            Task logSpace = _engine.Log.SpaceSignal;
            bool progressed = ContinuePendingOnce(out bool waitingForSpace);
            if (PendingCount == 0)
            {
                return true;
            }

            if (!wait)
            {
                return false;
            }

            if (progressed)
            {
                continue;
            }

            // Unprotected here, so that the epoch (and with it the safe read-only offset and the head) moves on.
            if (waitingForSpace)
            {
                WaitUnprotected(logSpace);
            }
            else if (_ready.Count == 0)
            {
                WaitUnprotected(readDone);
            }
            else
            {
                spinner.SpinOnce();
            }
        }
    }

    private bool ContinuePendingOnce(out bool waitingForSpace)
    {
        waitingForSpace = false;
        while (_readsDone.TryDequeue(out PendingOperation<TKey, TInput, TOutput, TContext>? done))
        {
            _ready.Enqueue(done);
        }

        if (_ready.Count == 0)
        {
            return false;
        }

        bool progressed = false;
        Enter();
        try
        {
            for (int remaining = _ready.Count; remaining > 0; remaining--)
            {
                PendingOperation<TKey, TInput, TOutput, TContext> operation = _ready.Dequeue();
                if (_engine.State.Word != _view.State.Word)
                {
                    // An earlier operation of this loop waited for log space and refreshed the epoch.
                    RefreshView();
                }

                OperationStatus status;
                try
                {
                    status = _engine.ContinuePending(operation, in _view);
                }
                catch (Exception error) when (operation.Completion is not null)
                {
                    // An awaited operation fails through its own task, whoever happens to be driving completions.
                    operation.Dispose();
                    _cpr.RemovePending(operation.SerialNo);
                    operation.Completion.TrySetException(error);
                    progressed = true;
                    continue;
                }

                switch (status)
                {
                    case OperationStatus.CrossVersion:
                        RefreshView();
                        _ready.Enqueue(operation);
                        progressed = true;
                        break;
                    case OperationStatus.Pending:
                        _ready.Enqueue(operation);
                        break;
                    case OperationStatus.RetryLater:
                        waitingForSpace = true;
                        _ready.Enqueue(operation);
                        break;
                    case OperationStatus.RecordOnStorage:
                        StartRead(operation);
                        progressed = true;
                        break;
                    default:
                        operation.Dispose();
                        _cpr.RemovePending(operation.SerialNo);
                        _engine.ReportCompletion(operation, ToStatus(status));
                        CompleteAwaiter(operation, status);
                        progressed = true;
                        break;
                }
            }
        }
        finally
        {
            Exit();
        }

        return progressed;
    }

    private void StartRead(PendingOperation<TKey, TInput, TOutput, TContext> operation)
    {
        Interlocked.Increment(ref _readsInFlight);
        _engine.StartRecordRead(operation, _onReadDone);
    }

    private void OnReadDone(PendingOperation<TKey, TInput, TOutput, TContext> operation)
    {
        // Queued before the count drops, so that PendingCount never reads zero while the operation is unfinished.
        _readsDone.Enqueue(operation);
        Interlocked.Decrement(ref _readsInFlight);
        _readDone.Signal();
    }

    /// <summary>Finishes pending operations (waiting for them) and gives the session's epoch entry back.</summary>
    public void Dispose()
    {
        if (_epochEntry < 0)
        {
            return;
        }

        if (_scopeOpen)
        {
            _scopeOpen = false;
            _epoch.Unprotect(_epochEntry);
        }

        if (!_store.IsDisposed)
        {
            CompletePending(wait: true);
        }

        _epoch.ReleaseEntry(_epochEntry);
        _epochEntry = -1;
        _store.OnSessionDisposed(_cpr);
    }

    /// <summary>
    /// Re-reads the global CPR state in the middle of an attempt, crossing the CPR point if the state machine has
    /// moved on: after the attempt found a record of the next version (CPR §6.2.1), or after waiting for a page turn
    /// refreshed the session's epoch (the state machine may then have gone past the phase the attempt decided in).
    /// The attempt then starts over with the new view. Also how every attempt takes its view when it enters protection.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void RefreshView()
    {
        SystemState state = _engine.State;
        // The view stays as it is only while nothing it was built from moved: the global state, the session's version
        // (the state machine may cross an idle session on its behalf), and no crossing left to retry (strict CPR
        // holds a session with pending operations back until they finish).
        if (state.Word != _view.State.Word || _cpr.Version != _view.Version || state.SessionVersion != _view.Version)
        {
            TakeNewView(state);
        }
    }

    private void TakeNewView(SystemState state)
    {
        if (state.SessionVersion != _cpr.Version)
        {
            // The state machine moved to IN-PROGRESS: this is the session's CPR point (CPR §6.2.2). With strict CPR
            // a session with pending operations stays behind until they have finished.
            _cpr.CrossTo(state.SessionVersion, _strictCpr);
        }

        _view = new SessionView(_epochEntry, _cpr.Version, state, _strictCpr);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ThrowIfDisposed()
    {
        if (_epochEntry < 0)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Status ToStatus(OperationStatus status) => status switch
    {
        OperationStatus.Success => Status.Ok,
        OperationStatus.NotFound => Status.NotFound,
        OperationStatus.Failed => Status.Error,
        _ => Status.Pending,
    };
}
