using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
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
/// <remarks>
/// <para>A session is not thread-safe: never call it from two threads at once. Its asynchronous operations may be in
/// flight together (start several, then await them); the session finishes them in the background.</para>
/// <para>The session's operations on one key take effect in the order they were issued, pending or not: an operation
/// issued while an earlier one of this session on the same key is pending waits behind it (and returns
/// <see cref="Status.Pending"/>), and a read sees every earlier operation of this session. Reads behind reads are the
/// exception: they run together (neither changes what the other sees), and may complete in any order. Operations of
/// different sessions take effect in the order they complete. A CPR commit point that excludes a pending operation
/// also excludes every later update of this session on its key.</para>
/// </remarks>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IHybridKVSession
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private static readonly TimeSpan RecheckInterval = TimeSpan.FromMilliseconds(50);

    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> _store;
    private readonly LightEpoch _epoch;

    // Every parked operation not reported yet, however it waits (read, retry, held behind its key, deferred report).
    private int _pendingCount;

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
        _keyOrder = new();
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
        if (!_store.CanCommit)
        {
            // Nothing would ever complete the wait.
            throw new InvalidOperationException(
                $"Session {Id} waits for a commit, but this store never commits: it has no " +
                HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions>.CheckpointRequirement);
        }

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

    /// <summary>
    /// The number of operations that went pending (returned <see cref="Status.Pending"/>, or are awaited by an
    /// asynchronous method) and have not been completed and reported yet.
    /// </summary>
    public int PendingCount => Volatile.Read(ref _pendingCount);

    /// <summary>Reads a key with the default input.</summary>
    /// <returns><see cref="Status.Ok"/> and <paramref name="output"/> filled by a reader callback,
    /// <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/> when the record is on the device or an earlier
    /// operation of this session on the key is pending (the read completes in <see cref="CompletePending"/>, which
    /// hands the output to the completion callback).</returns>
    public Status Read(in TKey key, ref TOutput output) => Read(in key, default!, ref output, default!);

    /// <summary>Reads a key: a reader callback turns the value and <paramref name="input"/> into the output.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/> when the
    /// read finishes in <see cref="CompletePending"/> (the completion callback then receives the output). A read
    /// sees every earlier operation of this session on the key, pending or not (see the remarks on the
    /// session).</returns>
    public Status Read(in TKey key, in TInput input, ref TOutput output, TContext context)
    {
        return ToStatus(Attempt<ReadKind>(in key, default!, in input, ref output, context, ExpiryTime.Keep,
            Waiter.CompletePending,
            TakeSerialNo(), out _));
    }

    /// <summary>
    /// Reads a key and, if it went pending, waits for it (blocking) so that the output is complete on return (it is
    /// returned here, not to the completion callback). For readers whose output points at the caller's memory, which
    /// must not be written after the call returns.
    /// </summary>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    internal Status ReadAndWait(in TKey key, in TInput input, ref TOutput output, TContext context)
    {
        OperationStatus status = Attempt<ReadKind>(in key, default!, in input, ref output, context,
            ExpiryTime.Keep, Waiter.Caller,
            TakeSerialNo(), out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? pending);
        if (pending is null)
        {
            return ToStatus(status);
        }

        // The output points at the caller's memory: this read finishes before the call returns, even when another
        // pending operation's continuation or callback throws meanwhile (that exception follows the read's own result).
        Task<(Status Status, TOutput Output)> completion = pending.Completion!.Task;
        List<Exception>? siblings = DriveUntilDone(completion);
        (Status finalStatus, output) = completion.GetAwaiter().GetResult();
        ThrowFailures(siblings);
        return finalStatus;
    }

    /// <summary>Inserts or overwrites the value of a key. Never reads the device.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when an earlier operation of this session on
    /// the key is pending: the upsert then takes effect after it, in <see cref="CompletePending"/> (upserts have no
    /// completion callback).</returns>
    public Status Upsert(in TKey key, in TValue value)
    {
        TOutput output = default!;
        return Run<UpsertKind>(in key, in value, default!, ref output, default!, ExpiryTime.Keep);
    }

    /// <summary>
    /// Inserts or overwrites the value of a key, which expires as <paramref name="expiration"/> says (a time to live
    /// counts from this call); once expired it reads as not found. Never reads the device; always appends a record
    /// (an expiry is never changed in place).
    /// </summary>
    /// <returns>As <see cref="Upsert(in TKey, in TValue)"/>.</returns>
    public Status Upsert(in TKey key, in TValue value, Expiration expiration)
    {
        TOutput output = default!;
        return Run<UpsertKind>(in key, in value, default!, ref output, default!, ExpiryOf(expiration));
    }

    /// <summary>Read-modify-write with the default context.</summary>
    public Status RMW(in TKey key, in TInput input) => RMW(in key, in input, (TContext)default!);

    /// <summary>
    /// Updates a key from its current value and <paramref name="input"/> (InitialUpdater if it has none, otherwise
    /// InPlaceUpdater or CopyUpdater).
    /// </summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.Pending"/> when the update finishes in
    /// <see cref="CompletePending"/> (its record is on the device or in the fuzzy region, or an earlier operation of
    /// this session on the key is pending).</returns>
    public Status RMW(in TKey key, in TInput input, TContext context)
    {
        TOutput output = default!;
        return Run<RmwKind>(in key, default!, in input, ref output, context, ExpiryTime.Keep);
    }

    /// <summary>Read-modify-write whose resulting value expires as <paramref name="expiration"/> says, with the default
    /// context.</summary>
    public Status RMW(in TKey key, in TInput input, Expiration expiration) => RMW(in key, in input, expiration, default!);

    /// <summary>
    /// Read-modify-write whose resulting value expires as <paramref name="expiration"/> says (a time to live counts
    /// from this call; <see cref="Expiration.Never"/> removes an expiry). An expired value counts as none: the
    /// InitialUpdater starts a new one. Without an <see cref="Expiration"/>, an RMW keeps the value's expiry.
    /// </summary>
    /// <returns>As <see cref="RMW(in TKey, in TInput, TContext)"/>.</returns>
    public Status RMW(in TKey key, in TInput input, Expiration expiration, TContext context)
    {
        TOutput output = default!;
        return Run<RmwKind>(in key, default!, in input, ref output, context, ExpiryOf(expiration));
    }

    /// <summary>Deletes a key with the default context.</summary>
    public Status Delete(in TKey key) => Delete(in key, default!);

    /// <summary>Deletes a key.</summary>
    /// <returns><see cref="Status.Ok"/>; <see cref="Status.NotFound"/> if memory or the index shows the key absent (a
    /// delete never reads the device: when the key's newest record is there, it appends a tombstone and reports
    /// <see cref="Status.Ok"/> whatever that record held); or <see cref="Status.Pending"/> when an earlier operation
    /// of this session on the key is pending or the delete must wait for a checkpoint's phase (finished in
    /// <see cref="CompletePending"/>).</returns>
    public Status Delete(in TKey key, TContext context)
    {
        TOutput output = default!;
        return Run<DeleteKind>(in key, default!, default!, ref output, context, ExpiryTime.Keep);
    }

    /// <summary>An <see cref="Expiration"/> as the record stores it, a time to live counted from now.</summary>
    private long ExpiryOf(Expiration expiration) => expiration.ToRecordTime(_engine.Clock);

    /// <summary>
    /// Runs an update to a final status or to pending, blocking while the log makes room: the operation keeps its
    /// serial number across the waits.
    /// </summary>
    private Status Run<TKind>(
        in TKey key, in TValue value, in TInput input, ref TOutput output, TContext context, long expiry)
        where TKind : struct, IOperationKind
    {
        long serialNo = TakeSerialNo();
        OperationStatus status = Attempt<TKind>(in key, in value, in input, ref output, context, expiry,
            Waiter.CompletePending, serialNo, out _);
        while (status == OperationStatus.RetryLater)
        {
            // Taken before the next attempt: a change after it wakes the wait, one before it is seen by the attempt.
            long logSpace = _engine.Log.Space.BlockingMark;
            status = Attempt<TKind>(in key, in value, in input, ref output, context, expiry, Waiter.CompletePending,
                serialNo, out _);
            if (status == OperationStatus.RetryLater)
            {
                WaitUnprotected(_engine.Log.Space, logSpace);
            }
        }

        return ToStatus(status);
    }

    /// <summary>
    /// Continues this session's pending operations, reporting each finished one to its completion callback (also
    /// those that the session's background driver finished while asynchronous operations were in flight).
    /// </summary>
    /// <param name="wait">Whether to keep going until every pending operation has finished. The wait blocks on device
    /// completions rather than spinning.</param>
    /// <returns><see langword="true"/> if no operation is pending any more.</returns>
    /// <exception cref="Exception">A callback or a continuation threw: the operation it belonged to was finished
    /// (with <see cref="Status.Error"/>) and the others continued (with <paramref name="wait"/>, all of them to the
    /// end). One such exception is rethrown as it is; several come together in an <see cref="AggregateException"/>, so
    /// that none is hidden (a pending upsert has no callback: its exception is the only sign that it failed).</exception>
    public bool CompletePending(bool wait = false)
    {
        ThrowIfDisposed();
        if (wait)
        {
            ThrowFailures(DriveUntilDone(awaited: null));
            return true;
        }

        if (_scopeOpen)
        {
            // A refresh point of the scope; also what lets a fuzzy-region operation's region become safe.
            RefreshScope();
        }

        ContinuePendingOnce(PendingDriver.Caller, out _);
        return PendingCount == 0;
    }

    /// <summary>
    /// Continues pending operations on the caller's thread until <paramref name="awaited"/> has completed or, without
    /// one, until none is pending; between passes it blocks outside protection (so that the epoch, and with it the
    /// safe read-only offset and the head, moves on) on device completions or log space. A continuation or callback
    /// that throws does not stop it: what it waits for still finishes first (a read into the caller's memory must not
    /// outlive the call).
    /// </summary>
    /// <returns>What the operations that failed meanwhile threw, for the caller to throw (<see cref="ThrowFailures"/>)
    /// once it has its own result.</returns>
    private List<Exception>? DriveUntilDone(Task? awaited)
    {
        var spinner = new SpinWait();
        List<Exception>? failures = null;
        while (true)
        {
            if (_scopeOpen)
            {
                RefreshScope();
            }

            long progress = _progress.BlockingMark;
            long logSpace = _engine.Log.Space.BlockingMark;
            bool progressed;
            bool waitingForSpace = false;
            try
            {
                progressed = ContinuePendingOnce(PendingDriver.Caller, out waitingForSpace, ref failures);
            }
            catch (Exception error) when (!_store.IsDisposed)
            {
                (failures ??= new()).Add(error);
                progressed = true;
            }

            if (awaited?.IsCompleted ?? PendingCount == 0)
            {
                return failures;
            }

            if (progressed)
            {
                continue;
            }

            if (waitingForSpace)
            {
                WaitUnprotected(_engine.Log.Space, logSpace);
            }
            else if (_ready.Count == 0)
            {
                // Reads the device finished but has not reported yet are taken here rather than waited for.
                if (!AwaitFinishedReadsBriefly(progress))
                {
                    WaitUnprotected(_progress, progress);
                }
            }
            else
            {
                // Only operations in the fuzzy region are left: they wait for the epoch, which signals nobody.
                spinner.SpinOnce();
            }
        }
    }

    /// <summary>
    /// Before the caller blocks for its reads: takes reads the device has finished, for up to
    /// <see cref="FinishedReadPolls"/> short spins (about 80 µs in all on the 2-core machine measured), and returns true
    /// as soon as some came (or other progress did). A read from storage takes tens to hundreds of microseconds, and on
    /// two cores a session that slept on every wait woke through the reaper thread, which its own wake-ups then
    /// preempted: with two workers larger than memory, blocking at once did 5.6-6.4M operations in 5 s where polling
    /// first did 7.3-7.8M, the workers' voluntary switches 29-36K against 7-10K and the reaper's involuntary ones 55-60K
    /// against 8-10K (bench/README.md, issue 19). Not inside a protected scope, which would hold the epoch meanwhile.
    /// </summary>
    private bool AwaitFinishedReadsBriefly(long progress)
    {
        Devices.StorageDevice? device = _engine.Log.Device;
        if (device is null || !device.TakesFinishedReads || _scopeOpen)
        {
            return false;
        }

        for (int i = 0; i < FinishedReadPolls; i++)
        {
            if (device.TryCompleteFinishedReads() || _progress.BlockingMark != progress)
            {
                return true;
            }

            Thread.SpinWait(32);
        }

        return false;
    }

    /// <summary>How many times a session about to wait for reads looks for finished ones, a short spin apart.</summary>
    private const int FinishedReadPolls = 64;

    /// <summary>
    /// Finishes pending operations (waiting for them) and gives the session's epoch entry back. It does not throw: a
    /// pending operation whose continuation or completion callback fails finishes with <see cref="Status.Error"/> as in
    /// <see cref="CompletePending"/>, and the failure is logged (event 8) instead of replacing an exception the caller
    /// may be unwinding with. Call <c>CompletePending(wait: true)</c> before disposing to receive it.
    /// </summary>
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
            try
            {
                CompletePending(wait: true);
            }
#pragma warning disable CA1031 // Dispose must not throw; every operation was finished and the failure is logged.
            catch (Exception error)
#pragma warning restore CA1031
            {
                Diagnostics.StoreLog.PendingFailedAtDispose(_store.Logger, Id, error);
            }
        }

        // A background driver on its way out must find the session closed, not a row another session may own.
        bool locked = LockIfShared();
        _epoch.ReleaseEntry(_epochEntry);
        _epochEntry = -1;
        UnlockIf(locked);
        DisposeSpares();
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

        _view = new SessionView(_epochEntry, _cpr.Version, state, _strictCpr, _engine.CommitStartAddress);
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
