using System.Runtime.CompilerServices;
using HybridKV.Epochs;
using HybridKV.Operations;
using HybridKV.Utilities;

namespace HybridKV.Sessions;

/// <summary>
/// A logical thread of operations on a store (FASTER §2.5, CPR §2): used by one caller at a time, but not tied to an
/// OS thread, so it may continue on another thread after an <c>await</c>. Each operation holds epoch protection only
/// for its own synchronous stretch; operations that cannot finish at once return <see cref="Status.Pending"/> and are
/// finished by <see cref="CompletePending"/>.
/// </summary>
/// <remarks>A session is not thread-safe: never call it from two threads at once.</remarks>
public sealed class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> _store;
    private readonly LightEpoch _epoch;
    private readonly Queue<PendingOperation<TKey, TInput, TOutput, TContext>> _pending = new();

    // Not owned by anybody else while >= 0; -1 once the session is disposed.
    private int _epochEntry;

    internal Session(
        HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> store,
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        int epochEntry)
    {
        _store = store;
        _engine = engine;
        _epoch = engine.Epoch;
        _epochEntry = epochEntry;
        Id = Guid.NewGuid();
    }

    /// <summary>The session's identity.</summary>
    public Guid Id { get; }

    /// <summary>The number of operations waiting for <see cref="CompletePending"/>.</summary>
    public int PendingCount => _pending.Count;

    /// <summary>Reads a key with the default input.</summary>
    /// <returns><see cref="Status.Ok"/> and <paramref name="output"/> filled by a reader callback, or
    /// <see cref="Status.NotFound"/>.</returns>
    public Status Read(in TKey key, ref TOutput output) => Read(in key, default!, ref output, default!);

    /// <summary>Reads a key: a reader callback turns the value and <paramref name="input"/> into the output.</summary>
    /// <returns><see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or <see cref="Status.Pending"/> when the
    /// read finishes in <see cref="CompletePending"/> (the completion callback then receives the output).</returns>
    public Status Read(in TKey key, in TInput input, ref TOutput output, TContext context)
    {
        Enter();
        try
        {
            OperationStatus status = _engine.InternalRead(in key, in input, ref output);
            if (status == OperationStatus.Pending)
            {
                _pending.Enqueue(new(PendingKind.Read, in key, in input, in output, context));
            }

            return ToStatus(status);
        }
        finally
        {
            Exit();
        }
    }

    /// <summary>Inserts or overwrites the value of a key.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    public Status Upsert(in TKey key, in TValue value)
    {
        while (true)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            OperationStatus status;
            Enter();
            try
            {
                while ((status = _engine.InternalUpsert(in key, in value, _epochEntry)) == OperationStatus.RetryNow)
                {
                }
            }
            finally
            {
                Exit();
            }

            if (status != OperationStatus.RetryLater)
            {
                return ToStatus(status);
            }

            WaitForLogSpace(logSpace);
        }
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
        while (true)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            OperationStatus status;
            Enter();
            try
            {
                while ((status = _engine.InternalRMW(in key, in input, _epochEntry)) == OperationStatus.RetryNow)
                {
                }

                if (status == OperationStatus.Pending)
                {
                    _pending.Enqueue(new(PendingKind.RMW, in key, in input, default!, context));
                }
            }
            finally
            {
                Exit();
            }

            if (status != OperationStatus.RetryLater)
            {
                return ToStatus(status);
            }

            WaitForLogSpace(logSpace);
        }
    }

    /// <summary>Deletes a key.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.NotFound"/> if the key did not exist.</returns>
    public Status Delete(in TKey key)
    {
        while (true)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            OperationStatus status;
            Enter();
            try
            {
                while ((status = _engine.InternalDelete(in key, _epochEntry)) == OperationStatus.RetryNow)
                {
                }
            }
            finally
            {
                Exit();
            }

            if (status != OperationStatus.RetryLater)
            {
                return ToStatus(status);
            }

            WaitForLogSpace(logSpace);
        }
    }

    /// <summary>
    /// Continues this session's pending operations, reporting each finished one to its completion callback.
    /// </summary>
    /// <param name="wait">Whether to keep going until every pending operation has finished.</param>
    /// <returns><see langword="true"/> if no operation is pending any more.</returns>
    public bool CompletePending(bool wait = false)
    {
        ThrowIfDisposed();
        var spinner = new SpinWait();
        while (true)
        {
            if (_pending.Count > 0)
            {
                ContinuePendingOnce();
            }

            if (_pending.Count == 0)
            {
                return true;
            }

            if (!wait)
            {
                return false;
            }

            // Unprotected here: other sessions finish their operations and the epoch (and with it the safe read-only
            // offset) moves on, which is what the parked operations wait for.
            spinner.SpinOnce();
        }
    }

    private void ContinuePendingOnce()
    {
        Enter();
        try
        {
            for (int remaining = _pending.Count; remaining > 0; remaining--)
            {
                PendingOperation<TKey, TInput, TOutput, TContext> operation = _pending.Dequeue();
                OperationStatus status = _engine.ContinuePending(operation, _epochEntry);
                if (status is OperationStatus.Pending or OperationStatus.RetryLater)
                {
                    _pending.Enqueue(operation);
                    continue;
                }

                _engine.ReportCompletion(operation, ToStatus(status));
            }
        }
        finally
        {
            Exit();
        }
    }

    /// <summary>Finishes pending operations (waiting for them) and gives the session's epoch entry back.</summary>
    public void Dispose()
    {
        if (_epochEntry < 0)
        {
            return;
        }

        if (!_store.IsDisposed)
        {
            CompletePending(wait: true);
        }

        _epoch.ReleaseEntry(_epochEntry);
        _epochEntry = -1;
        _store.OnSessionDisposed();
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Enter()
    {
        ThrowIfDisposed();
        _epoch.Protect(_epochEntry);
        // Checked after protecting: the store waits for protected sessions before freeing memory, so a store that
        // is not disposed now stays usable until Exit.
        if (_store.IsDisposed)
        {
            _epoch.Unprotect(_epochEntry);
            ThrowHelper.ThrowObjectDisposed(_store.GetType().Name);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Exit() => _epoch.Unprotect(_epochEntry);

    /// <summary>
    /// Waits, unprotected, until the log may have a free frame: a flush finished or the head moved. The signal was
    /// taken before the attempt that failed, so none is missed; the wait is bounded anyway, because the attempt is
    /// simply made again.
    /// </summary>
    private static void WaitForLogSpace(Task logSpace) => logSpace.Wait(LogSpaceRecheckInterval);

    private static readonly TimeSpan LogSpaceRecheckInterval = TimeSpan.FromMilliseconds(50);

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
        _ => Status.Pending,
    };
}
