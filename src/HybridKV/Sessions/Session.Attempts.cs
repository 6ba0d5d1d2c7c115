using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// One attempt at each operation, under epoch protection. The blocking methods and the asynchronous ones drive these
/// the same way and differ only in how they wait: for log space, and for pending operations.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
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

    private OperationStatus TryReadOnce(
        in TKey key, in TInput input, ref TOutput output, TContext context, bool awaited, long serialNo,
        out PendingOperation<TKey, TInput, TOutput, TContext>? pending)
    {
        pending = null;
        Enter();
        try
        {
            OperationStatus status = _engine.InternalRead(in key, in input, ref output, out StorageRead storageRead);
            if (status == OperationStatus.RecordOnStorage)
            {
                pending = Park(PendingKind.Read, in key, in input, in output, context, awaited, serialNo);
                pending.Storage = storageRead;
                StartRead(pending);
            }

            EndOperationIfDone(status);
            return status;
        }
        finally
        {
            Exit();
        }
    }

    private OperationStatus TryUpsertOnce(in TKey key, in TValue value)
    {
        Enter();
        try
        {
            OperationStatus status;
            while (ShouldRetryNow(status = _engine.InternalUpsert(in key, in value, in _view)))
            {
            }

            EndOperationIfDone(status);
            return status;
        }
        finally
        {
            Exit();
        }
    }

    private OperationStatus TryRMWOnce(
        in TKey key, in TInput input, TContext context, bool awaited, long serialNo,
        out PendingOperation<TKey, TInput, TOutput, TContext>? pending)
    {
        pending = null;
        Enter();
        try
        {
            OperationStatus status;
            StorageRead storageRead;
            while (ShouldRetryNow(status = _engine.InternalRMW(in key, in input, in _view, out storageRead)))
            {
            }

            if (status is OperationStatus.Pending or OperationStatus.RecordOnStorage)
            {
                pending = Park(PendingKind.RMW, in key, in input, default!, context, awaited, serialNo);
                StartOrQueue(pending, status, storageRead);
            }

            EndOperationIfDone(status);
            return status;
        }
        finally
        {
            Exit();
        }
    }

    private OperationStatus TryDeleteOnce(
        in TKey key, TContext context, bool awaited, long serialNo,
        out PendingOperation<TKey, TInput, TOutput, TContext>? pending)
    {
        pending = null;
        Enter();
        try
        {
            OperationStatus status;
            StorageRead storageRead;
            while (ShouldRetryNow(status = _engine.InternalDelete(in key, in _view, out storageRead)))
            {
            }

            if (status is OperationStatus.Pending or OperationStatus.RecordOnStorage)
            {
                pending = Park(PendingKind.Delete, in key, default!, default!, context, awaited, serialNo);
                StartOrQueue(pending, status, storageRead);
            }

            EndOperationIfDone(status);
            return status;
        }
        finally
        {
            Exit();
        }
    }

    /// <summary>
    /// Clears the operation in progress once an attempt has finished it (or parked it), while still protected: the
    /// state machine may cross the session on its behalf as soon as it leaves protection, and must then count this
    /// operation as done in the version it ran in. An attempt that must wait for log space has done nothing yet and
    /// stays in progress.
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
            RefreshView();
            return true;
        }

        return false;
    }

    /// <summary>Turns the operation in progress into a pending one; from here on it counts among the session's
    /// pending operations, which relaxed CPR excludes from a commit whose CPR point they straddle.</summary>
    private PendingOperation<TKey, TInput, TOutput, TContext> Park(
        PendingKind kind, in TKey key, in TInput input, in TOutput output, TContext context, bool awaited,
        long serialNo)
    {
        _cpr.AddPending(serialNo);
        _cpr.EndOperation();
        return new(kind, in key, in input, in output, context)
        {
            SerialNo = serialNo,
            Completion = awaited
                ? new TaskCompletionSource<(Status, TOutput)>(TaskCreationOptions.RunContinuationsAsynchronously)
                : null,
        };
    }

    private void StartOrQueue(
        PendingOperation<TKey, TInput, TOutput, TContext> operation, OperationStatus status, StorageRead storageRead)
    {
        if (status == OperationStatus.RecordOnStorage)
        {
            operation.Storage = storageRead;
            StartRead(operation);
        }
        else
        {
            _ready.Enqueue(operation);
        }
    }

    private static void CompleteAwaiter(PendingOperation<TKey, TInput, TOutput, TContext> operation, OperationStatus status)
    {
        if (operation.Completion is not { } completion)
        {
            return;
        }

        if (status == OperationStatus.Failed && operation.IoError is { } error)
        {
            completion.TrySetException(error);
        }
        else
        {
            completion.TrySetResult((ToStatus(status), operation.Output));
        }
    }
}
