using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// The asynchronous operations: the same attempts as the blocking ones, but waiting (for log space, for the device)
/// with <c>await</c> instead of blocking a thread. An operation that needs no waiting completes synchronously and
/// allocates nothing.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Reads a key, awaiting the device if the record is not in memory.</summary>
    /// <returns>The status (<see cref="Status.Ok"/> or <see cref="Status.NotFound"/>) and the reader's output.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    public async ValueTask<ReadResult<TOutput>> ReadAsync(
        TKey key, TInput input = default!, TContext context = default!, CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        TOutput output = default!;
        OperationStatus status = TryReadOnce(in key, in input, ref output, context, awaited: true, TakeSerialNo(),
            out PendingOperation<TKey, TInput, TOutput, TContext>? pending);
        if (pending is null)
        {
            return new ReadResult<TOutput>(ToStatus(status), output);
        }

        (Status finalStatus, TOutput finalOutput) = await AwaitPendingAsync(pending, cancellationToken).ConfigureAwait(false);
        return new ReadResult<TOutput>(finalStatus, finalOutput);
    }

    /// <summary>Inserts or overwrites a value; awaits (rather than blocks) when the log must first make room.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    public async ValueTask<Status> UpsertAsync(TKey key, TValue value, CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        TakeSerialNo();
        OperationStatus status = TryUpsertOnce(in key, in value);
        while (status == OperationStatus.RetryLater)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryUpsertOnce(in key, in value);
            if (status == OperationStatus.RetryLater)
            {
                await WaitAsync(logSpace, cancellationToken).ConfigureAwait(false);
            }
        }

        return ToStatus(status);
    }

    /// <summary>Read-modify-write, awaiting the device or log space as needed.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the current record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    public async ValueTask<Status> RMWAsync(
        TKey key, TInput input, TContext context = default!, CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        long serialNo = TakeSerialNo();
        OperationStatus status = TryRMWOnce(in key, in input, context, awaited: true, serialNo,
                out PendingOperation<TKey, TInput, TOutput, TContext>? pending);
        while (status == OperationStatus.RetryLater)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryRMWOnce(in key, in input, context, awaited: true, serialNo, out pending);
            if (status == OperationStatus.RetryLater)
            {
                await WaitAsync(logSpace, cancellationToken).ConfigureAwait(false);
            }
        }

        return pending is null
            ? ToStatus(status)
            : (await AwaitPendingAsync(pending, cancellationToken).ConfigureAwait(false)).Status;
    }

    /// <summary>Deletes a key, awaiting the device or log space as needed.</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.NotFound"/> if the key did not exist.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the current record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    public async ValueTask<Status> DeleteAsync(
        TKey key, TContext context = default!, CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        long serialNo = TakeSerialNo();
        OperationStatus status = TryDeleteOnce(in key, context, awaited: true, serialNo,
                out PendingOperation<TKey, TInput, TOutput, TContext>? pending);
        while (status == OperationStatus.RetryLater)
        {
            Task logSpace = _engine.Log.SpaceSignal;
            status = TryDeleteOnce(in key, context, awaited: true, serialNo, out pending);
            if (status == OperationStatus.RetryLater)
            {
                await WaitAsync(logSpace, cancellationToken).ConfigureAwait(false);
            }
        }

        return pending is null
            ? ToStatus(status)
            : (await AwaitPendingAsync(pending, cancellationToken).ConfigureAwait(false)).Status;
    }

    /// <summary>Completes every pending operation of this session, awaiting the device instead of blocking.</summary>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    public async Task CompletePendingAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        ThrowIfDisposed();
        while (true)
        {
            Task readDone = _readDone.NextSignal;
            Task logSpace = _engine.Log.SpaceSignal;
            bool progressed = ContinuePendingOnce(out bool waitingForSpace);
            if (PendingCount == 0)
            {
                return;
            }

            if (!progressed)
            {
                await WaitAsync(waitingForSpace ? logSpace : readDone, cancellationToken).ConfigureAwait(false);
            }
        }
    }

    private async Task<(Status Status, TOutput Output)> AwaitPendingAsync(
        PendingOperation<TKey, TInput, TOutput, TContext> pending, CancellationToken cancellationToken)
    {
        Task<(Status, TOutput)> completion = pending.Completion!.Task;
        while (!completion.IsCompleted)
        {
            Task readDone = _readDone.NextSignal;
            Task logSpace = _engine.Log.SpaceSignal;
            bool progressed = ContinuePendingOnce(out bool waitingForSpace);
            if (!progressed && !completion.IsCompleted)
            {
                await WaitAsync(waitingForSpace ? logSpace : readDone, cancellationToken).ConfigureAwait(false);
            }
        }

        return await completion.ConfigureAwait(false);
    }

    /// <summary>
    /// Waits for a signal, but at most <see cref="RecheckInterval"/>: fuzzy-region operations wait for the epoch, which
    /// signals nobody, so they are simply tried again.
    /// </summary>
    private static async Task WaitAsync(Task signal, CancellationToken cancellationToken)
    {
        Task delay = Task.Delay(RecheckInterval, cancellationToken);
        await Task.WhenAny(signal, delay).ConfigureAwait(false);
        cancellationToken.ThrowIfCancellationRequested();
    }
}
