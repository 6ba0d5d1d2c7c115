using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// One attempt at an operation, under epoch protection: the one place every operation, blocking or asynchronous,
/// is tried, parked as pending, or held behind an earlier pending operation of the session on the same key.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Who waits for an operation that cannot finish in its first attempt.</summary>
    private enum Waiter : byte
    {
        /// <summary>The caller's <see cref="CompletePending"/> finishes it and reports it to the completion callback.</summary>
        CompletePending,

        /// <summary>The caller blocks on the operation's task, driving completions itself.</summary>
        Caller,

        /// <summary>An asynchronous method awaits the operation's task; the session's background driver finishes it,
        /// so that the caller may issue other operations meanwhile.</summary>
        Background,
    }

    /// <summary>
    /// An operation's kind as a type argument: <see cref="Attempt"/> is compiled once per kind (a struct type argument
    /// gets its own code, and the kind is a constant in it), so a read runs a method that holds only the read's path
    /// rather than one that inlines all four operations (7.7 KB of machine code, in which the read path spilled registers).
    /// </summary>
    private interface IOperationKind
    {
        static abstract PendingKind Kind { get; }
    }

    private struct ReadKind : IOperationKind
    {
        public static PendingKind Kind => PendingKind.Read;
    }

    private struct RmwKind : IOperationKind
    {
        public static PendingKind Kind => PendingKind.RMW;
    }

    private struct DeleteKind : IOperationKind
    {
        public static PendingKind Kind => PendingKind.Delete;
    }

    private struct UpsertKind : IOperationKind
    {
        public static PendingKind Kind => PendingKind.Upsert;
    }

    /// <summary>Takes the serial number of a new operation (once per operation, not per attempt).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long TakeSerialNo()
    {
        if (_strictCpr && MustFinishPendingFirst())
        {
            // Strict CPR: the session is behind its CPR point only because of pending operations; finish them before
            // adding new ones, or a steady stream of pending operations would hold the checkpoint forever.
            CompletePending(wait: true);
        }

        return _cpr.BeginOperation();
    }

    private bool MustFinishPendingFirst()
    {
        SystemState state = _engine.State;
        return state.Phase >= CprPhase.InProgress && _cpr.Version <= state.Version && PendingCount > 0;
    }

    /// <summary>
    /// One attempt at an operation. It either finishes (a final status), waits for log space without having done
    /// anything (<see cref="OperationStatus.RetryLater"/>, unless <paramref name="waiter"/> is
    /// <see cref="Waiter.Background"/>, which parks it instead), or is parked as <paramref name="pending"/>: reading
    /// the device, to be retried, or held behind an earlier pending operation on its key (FASTER appendix G's
    /// pending queue, ordered per key so that the session's operations on a key take effect in serial order).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus Attempt<TKind>(
        in TKey key, in TValue value, in TInput input, ref TOutput output, TContext context,
        long expiry, Waiter waiter, long serialNo, out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? pending)
        where TKind : struct, IOperationKind
    {
        EnterOrEndOperation();
        try
        {
            return AttemptProtected<TKind>(in key, in value, in input, ref output, context, expiry, waiter, serialNo,
                StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>.ChainUnknown, out pending);
        }
        catch
        {
            // A callback threw, or the log cannot make room: the operation is over, having changed nothing. Nothing
            // may stay in progress, or every later CPR point of an idle session would stop short of it and waiting
            // for its commit would never end.
            _cpr.EndOperation();
            throw;
        }
        finally
        {
            Exit();
        }
    }

    /// <summary>
    /// The attempt itself, under the caller's protection; a caller that catches an exception from it ends the
    /// operation (<see cref="Attempt"/>). A read may start from <paramref name="chainHead"/>, the address its key's
    /// entry led to under the same protection (<see cref="Prefetch"/>), or
    /// <see cref="StoreEngine{TKey, TValue, TInput, TOutput, TContext, TFunctions}.ChainUnknown"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus AttemptProtected<TKind>(
        in TKey key, in TValue value, in TInput input, ref TOutput output, TContext context,
        long expiry, Waiter waiter, long serialNo, long chainHead,
        out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? pending)
        where TKind : struct, IOperationKind
    {
        PendingKind kind = TKind.Kind;
        pending = null;
        // A field of this object: the only cost of the key order while nothing is pending.
        if (_pendingCount != 0 && MustWaitBehindPending(in key, kind))
        {
            pending = Park(kind, in key, in value, in input, in output, context, expiry, waiter, serialNo,
                OperationStatus.Pending, default);
            return OperationStatus.Pending;
        }

        OperationStatus status;
        StorageRead storageRead;
        do
        {
            status = kind switch
            {
                PendingKind.Read => _engine.InternalRead(in key, in input, ref output, chainHead, out storageRead),
                PendingKind.RMW => _engine.InternalRMW(in key, in input, expiry, in _view, out storageRead),
                PendingKind.Delete => StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>.Blind(
                    _engine.InternalDelete(in key, in _view), out storageRead),
                _ => StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>.Blind(
                    _engine.InternalUpsert(in key, in value, expiry, in _view), out storageRead),
            };

            // A retry looks the key up again: the entry moved since the chain head was found.
            chainHead = StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>.ChainUnknown;
        }
        while (ShouldRetryNow(status));

        if (status is OperationStatus.Pending or OperationStatus.RecordOnStorage
            || (status == OperationStatus.RetryLater && waiter == Waiter.Background))
        {
            pending = Park(kind, in key, in value, in input, in output, context, expiry, waiter, serialNo,
                status, storageRead);
            return OperationStatus.Pending;
        }

        EndOperationIfDone(status);
        return status;
    }

    /// <summary>Enters the attempt's stretch; an operation that cannot enter (the store or session is disposed) is
    /// over, or the session's next operation would find it still in progress.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void EnterOrEndOperation()
    {
        try
        {
            Enter();
        }
        catch
        {
            _cpr.EndOperation();
            throw;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool MustWaitBehindPending(in TKey key, PendingKind kind) =>
        _keyOrder.KeyCount != 0 && _keyOrder.MustWait(_engine.KeyHashOf(in key), kind);

    /// <summary>
    /// Clears the operation in progress once an attempt has finished it, while still protected: the state machine
    /// may cross the session on its behalf as soon as it leaves protection, and must then count this operation as
    /// done in the version it ran in. An attempt that must wait for log space has done nothing yet and stays in
    /// progress.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void EndOperationIfDone(OperationStatus status)
    {
        if (status != OperationStatus.RetryLater)
        {
            _cpr.EndOperation();
        }
    }

    /// <summary>
    /// Whether an attempt should be repeated at once: it lost a race on the index, or its view of the CPR state is
    /// out of date (it found a record of the next version, or the state moved while it waited for a page turn), in
    /// which case the session refreshes its view, crossing its CPR point if due.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool ShouldRetryNow(OperationStatus status)
    {
        if (status == OperationStatus.RetryNow)
        {
            return true;
        }

        if (status == OperationStatus.CrossVersion)
        {
            if (_engine.Index.ResizeStatus.Phase != Index.ResizePhase.Stable)
            {
                // The index is preparing a resize and this attempt needs to swing an entry: only once this session
                // (and every other) has moved its epoch on may the resize go on to the phase where it can (FASTER
                // appendix B). The attempt has changed nothing yet; its view is taken again below.
                MoveEpochForIndexResize();
            }

            RefreshView();
            return true;
        }

        return false;
    }

    /// <summary>Moves this session's epoch on while the index prepares a resize, yielding the processor to whoever
    /// holds the epoch back.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void MoveEpochForIndexResize()
    {
        _epoch.Refresh(_epochEntry);
        Thread.Yield();
    }
}
