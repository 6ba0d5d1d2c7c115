using System.Collections.Concurrent;
using System.Runtime.ExceptionServices;
using HybridKV.Operations;
using HybridKV.Utilities;

namespace HybridKV.Sessions;

/// <summary>
/// The session's pending operations (FASTER appendix G's pending queue): parking an operation, device reads, the one
/// loop that continues every kind of pending operation, and reporting finished ones. Exception safety lives here: an
/// operation whose continuation or completion callback throws still leaves the session's CPR bookkeeping, its key's
/// queue and its buffers.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Who is continuing pending operations, which decides where completion callbacks run.</summary>
    private enum PendingDriver : byte
    {
        /// <summary>The caller (CompletePending, a blocking read): reports everything.</summary>
        Caller,

        /// <summary>The background driver: completes awaited operations, and defers the report of operations started
        /// by the blocking methods to the caller's next <see cref="CompletePending"/>.</summary>
        Background,

        /// <summary><see cref="CompletePendingAsync"/> after its first await: the caller's, on another thread.</summary>
        Detached,
    }

    /// <summary>An operation that finished, to be reported once the pass has left protection.</summary>
    /// <param name="Operation">The operation.</param>
    /// <param name="Status">Its final status.</param>
    /// <param name="Thrown">What its continuation threw, if it did.</param>
    private readonly record struct Finished(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> Operation, Status Status, Exception? Thrown);

    // Operations to continue now: finished device reads, retries (fuzzy region, log space), and operations released
    // by the operation before them on their key.
    private readonly Queue<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> _ready = new();

    // Device reads finish on other threads; they land here and wake whoever drives completions. A stack linked through
    // the operations themselves (a queue's segments were allocated as they filled, a few dozen bytes a read); taken
    // whole and put back in landing order by TakeReadsDone.
    private PendingOperation<TKey, TValue, TInput, TOutput, TContext>? _readsDone;
    private readonly Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> _onReadDone;

    // Signalled when a device read lands and when the background driver has finished something.
    private readonly Utilities.AsyncSignal _progress = new();

    // Per-key issue order of the parked operations.
    private readonly PendingKeyOrder<TKey, TValue, TInput, TOutput, TContext> _keyOrder;

    // Finished in the current pass; reported after it leaves protection.
    private readonly List<Finished> _finished = new();

    // Operations of the blocking methods that the background driver finished: their callbacks run on the caller's
    // thread, in its next CompletePending.
    private readonly Queue<Finished> _deferred = new();

    /// <summary>Turns the operation in progress into a pending one and starts it, or holds it behind the pending
    /// operation before it on its key. From here on it counts among the session's pending operations, which relaxed
    /// CPR excludes from a commit whose CPR point they straddle.</summary>
    private PendingOperation<TKey, TValue, TInput, TOutput, TContext> Park(
        PendingKind kind, in TKey key, in TValue value, in TInput input, in TOutput output, TContext context,
        long expiry, Waiter waiter, long serialNo, OperationStatus status, StorageRead storageRead)
    {
        _cpr.AddPending(serialNo);
        _cpr.EndOperation();
        TaskCompletionSource<(Status, TOutput)>? completion = waiter == Waiter.CompletePending
            ? null
            : new TaskCompletionSource<(Status, TOutput)>(TaskCreationOptions.RunContinuationsAsynchronously);
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation = RentSpare();
        operation.Start(kind, _engine.KeyHashOf(in key), in key, in value, in input, in output, context, serialNo, expiry,
            completion, drivenInBackground: waiter == Waiter.Background);
        Interlocked.Increment(ref _pendingCount);
        if (operation.DrivenInBackground)
        {
            Interlocked.Increment(ref _backgroundCount);
        }

        if (_keyOrder.Append(operation))
        {
            if (status == OperationStatus.RecordOnStorage)
            {
                operation.Storage = storageRead;
                StartOrShareRecordRead(operation);
            }
            else
            {
                _ready.Enqueue(operation);
            }
        }

        return operation;
    }

    // Finished operations, kept with their buffers for the next operations that go pending, so that a read from the
    // device allocates no operation and no buffer: one reported to its completion callback once the callback returns,
    // an awaited one once its task has its result (the caller reads that task right after parking it, possibly after
    // the operation finished: the task stays on the operation until its next Start, which only the caller does).
    private readonly SpareObjects<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> _spare = new(MaxSpare);

    /// <summary>At most this many finished operations are kept, each with a buffer of a few sectors (up to about 16
    /// MiB for a session that keeps as many reads in flight): as many as a busy session has pending at once. A session
    /// with more pending makes (and later frees) an operation for each beyond it.</summary>
    internal const int MaxSpare = 4096;

    private PendingOperation<TKey, TValue, TInput, TOutput, TContext> RentSpare() =>
        _spare.TryTake(out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? spare)
            ? spare
            : new PendingOperation<TKey, TValue, TInput, TOutput, TContext>();

    private void ReturnSpare(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        operation.Clear();
        if (!_spare.TryKeep(operation))
        {
            operation.Dispose();
        }
    }

    /// <summary>Finished operations kept for reuse.</summary>
    internal int SpareCount => _spare.Count;

    /// <summary>Frees the buffers of the operations kept for reuse (the session is closing).</summary>
    private void DisposeSpares()
    {
        while (_spare.TryTake(out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? spare))
        {
            spare.Dispose();
        }
    }

    private void OnReadDone(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? top;
        do
        {
            top = Volatile.Read(ref _readsDone);
            operation.NextDone = top;
        }
        while (Interlocked.CompareExchange(ref _readsDone, operation, top) != top);

        _progress.Signal();
        WakeDriverHere();
    }

    /// <summary>
    /// One pass over the operations that can go on, then the reports of those that finished; what failed operations
    /// threw is thrown (see <see cref="ThrowFailures"/>).
    /// </summary>
    /// <returns>Whether anything happened (an operation finished, was reported, or started a read).</returns>
    private bool ContinuePendingOnce(PendingDriver driver, out bool waitingForSpace)
    {
        List<Exception>? failures = null;
        bool progressed = ContinuePendingOnce(driver, out waitingForSpace, ref failures);
        ThrowFailures(failures);
        return progressed;
    }

    /// <summary>
    /// One pass, collecting into <paramref name="failures"/> (created when the first one comes) what the operations
    /// that failed in it threw: their continuation or completion callback.
    /// </summary>
    private bool ContinuePendingOnce(PendingDriver driver, out bool waitingForSpace, ref List<Exception>? failures)
    {
        bool locked = driver == PendingDriver.Caller && LockIfShared();
        try
        {
            bool progressed = ContinueReady(out waitingForSpace);
            progressed |= _finished.Count != 0 || (driver != PendingDriver.Background && _deferred.Count != 0);
            Report(driver, ref failures);
            if (driver != PendingDriver.Background &&
                (_ready.Count != 0 || Volatile.Read(ref _backgroundCount) == 0))
            {
                // This pass may have left the parked driver work (an operation it released on its key that must
                // retry) or none at all (it finished the last awaited operation): either way the driver must run.
                WakeDriver();
            }

            return progressed;
        }
        finally
        {
            UnlockIf(locked);
        }
    }

    /// <summary>
    /// Throws what pending operations threw: the exception itself when one failed, an <see cref="AggregateException"/>
    /// holding every one when several did, so that no failure is hidden behind another (a pending upsert has no
    /// callback: its exception is the only sign that it did not take effect).
    /// </summary>
    private void ThrowFailures(List<Exception>? failures)
    {
        if (failures is not { Count: > 0 })
        {
            return;
        }

        if (failures.Count == 1)
        {
            ExceptionDispatchInfo.Throw(failures[0]);
        }

        throw new AggregateException(
            $"{failures.Count} pending operations of session {Id} failed; each finished with Status.Error and changed " +
            "nothing.", failures);
    }

    /// <summary>
    /// Starts the device read of a newly parked operation, or, for a read of a record that a running read of the same
    /// key is reading already, waits for that read's bytes (<see cref="TakeReadsDone"/> hands them on). Under zipf, with
    /// thousands of operations pending, a hot key's reads were a good share of all the device reads, each of the same
    /// record (bench/README.md, issue 19).
    /// </summary>
    private void StartOrShareRecordRead(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        if (operation.Kind == PendingKind.Read)
        {
            if (_keyOrder.ReadingSameRecord(operation) is { } reading)
            {
                operation.NextSharing = reading.FirstSharing;
                reading.FirstSharing = operation;
                return;
            }

            _keyOrder.ReadStarted(operation);
        }

        _engine.StartRecordRead(operation, _onReadDone);
    }

    /// <summary>Moves the landed reads to <see cref="_ready"/>, oldest first, with the reads that shared them.</summary>
    private void TakeReadsDone()
    {
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? landed = Interlocked.Exchange(ref _readsDone, null);
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? oldest = null;
        while (landed is not null)
        {
            PendingOperation<TKey, TValue, TInput, TOutput, TContext>? next = landed.NextDone;
            landed.NextDone = oldest;
            oldest = landed;
            landed = next;
        }

        while (oldest is not null)
        {
            PendingOperation<TKey, TValue, TInput, TOutput, TContext>? next = oldest.NextDone;
            oldest.NextDone = null;
            _ready.Enqueue(oldest);
            if (oldest.Kind == PendingKind.Read)
            {
                _keyOrder.ReadLanded(oldest);
                HandOnSharedRead(oldest);
            }

            oldest = next;
        }
    }

    private void HandOnSharedRead(PendingOperation<TKey, TValue, TInput, TOutput, TContext> landed)
    {
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? sharing = landed.FirstSharing;
        landed.FirstSharing = null;
        while (sharing is not null)
        {
            PendingOperation<TKey, TValue, TInput, TOutput, TContext>? next = sharing.NextSharing;
            sharing.NextSharing = null;
            landed.ShareRecordWith(sharing);
            _ready.Enqueue(sharing);
            sharing = next;
        }
    }

    private bool ContinueReady(out bool waitingForSpace)
    {
        waitingForSpace = false;
        TakeReadsDone();

        if (_ready.Count == 0)
        {
            return false;
        }

        bool progressed = false;
        EnterProtection();
        try
        {
            for (int remaining = _ready.Count; remaining > 0; remaining--)
            {
                PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation = _ready.Dequeue();
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
#pragma warning disable CA1031 // The operation finishes with the error, which its caller then receives.
                catch (Exception thrown)
#pragma warning restore CA1031
                {
                    remaining += Finish(operation, OperationStatus.Failed, thrown);
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
                        _engine.StartRecordRead(operation, _onReadDone);
                        progressed = true;
                        break;
                    default:
                        // The operation it released on its key goes on in this pass, so a chain drains at once.
                        remaining += Finish(operation, status, thrown: null);
                        progressed = true;
                        break;
                }
            }
        }
        finally
        {
            ExitProtection();
        }

        return progressed;
    }

    /// <summary>The session's bookkeeping for a finished operation; its report follows once out of protection.</summary>
    /// <returns>How many operations of its key it released (queued to run now).</returns>
    private int Finish(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, OperationStatus status, Exception? thrown)
    {
        _cpr.RemovePending(operation.SerialNo);
        int released = _keyOrder.Remove(operation, _ready);

        if (operation.DrivenInBackground)
        {
            Interlocked.Decrement(ref _backgroundCount);
        }

        _finished.Add(new Finished(operation, ToStatus(status), thrown));
        return released;
    }

    /// <summary>Reports finished operations: completion callbacks, then the awaiting task if there is one.</summary>
    /// <param name="driver">Who drives the pass.</param>
    /// <param name="errors">Receives every exception a caller of the blocking methods must see (a continuation or
    /// callback threw).</param>
    private void Report(PendingDriver driver, ref List<Exception>? errors)
    {
        if (driver != PendingDriver.Background)
        {
            while (_deferred.TryDequeue(out Finished deferred))
            {
                Collect(Report(deferred), ref errors);
            }
        }

        foreach (Finished finished in _finished)
        {
            if (driver == PendingDriver.Background && finished.Operation.Completion is null)
            {
                _deferred.Enqueue(finished);
            }
            else
            {
                Collect(Report(finished), ref errors);
            }
        }

        _finished.Clear();
    }

    private static void Collect(Exception? error, ref List<Exception>? errors)
    {
        if (error is not null)
        {
            (errors ??= new()).Add(error);
        }
    }

    private Exception? Report(Finished finished)
    {
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation = finished.Operation;
        Exception? error = finished.Thrown;
        if (operation.Completion is not { } completion)
        {
            // Only an operation of the blocking methods is reported to its completion callback, which then owns the
            // output; awaited operations hand theirs to their caller, so no two parties ever hold one output.
            try
            {
                _engine.ReportCompletion(operation, finished.Status);
            }
#pragma warning disable CA1031 // Handed to the caller of CompletePending.
            catch (Exception thrown)
#pragma warning restore CA1031
            {
                error ??= thrown;
            }

            Interlocked.Decrement(ref _pendingCount);
            ReturnSpare(operation);
            return error;
        }

        Interlocked.Decrement(ref _pendingCount);

        // A device error fails an awaited operation; the blocking methods report it as Status.Error.
        error ??= finished.Status == Status.Error ? operation.IoError : null;
        TOutput output = operation.Output;

        // Kept for reuse before its caller resumes, so that the caller's next operation finds it: the caller took the
        // task when it parked the operation, and only the caller starts a kept one again.
        ReturnSpare(operation);
        if (error is null)
        {
            completion.TrySetResult((finished.Status, output));
        }
        else
        {
            completion.TrySetException(error);
        }

        return null;
    }

    /// <summary>
    /// Fails every operation the background driver could continue, after the session or store became unusable under
    /// it (the store was disposed): awaiting callers get the exception instead of waiting forever.
    /// </summary>
    private void FailContinuable(Exception error)
    {
        TakeReadsDone();

        while (_ready.TryDequeue(out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? operation))
        {
            _ = Finish(operation, OperationStatus.Failed, error);
        }

        List<Exception>? ignored = null;
        Report(PendingDriver.Background, ref ignored);
    }
}
