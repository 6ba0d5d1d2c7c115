using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// The asynchronous operations: the same attempt as the blocking ones; an operation that cannot finish at once is
/// parked and finished by the session's background driver, and the caller awaits its task. So several asynchronous
/// operations may be in flight on one session (issued without awaiting in between, then awaited in any order or
/// together), each with its own result. An operation that needs no waiting completes synchronously and allocates
/// nothing.
/// </summary>
/// <remarks>
/// Cancelling an operation's token stops the wait for it, not the operation: it has its serial number and may
/// already have taken effect, so it still finishes (in its place in the session's order), and the session stays
/// usable.
/// </remarks>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Reads a key, awaiting the device if the record is not in memory.</summary>
    /// <returns>The status (<see cref="Status.Ok"/> or <see cref="Status.NotFound"/>) and the reader's output.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the read itself still completes.</exception>
    public ValueTask<ReadResult<TOutput>> ReadAsync(
        TKey key, TInput input = default!, TContext context = default!, CancellationToken cancellationToken = default)
    {
        BeginAsync(cancellationToken);
        TOutput output = default!;
        OperationStatus status = Attempt<ReadKind>(in key, default!, in input, ref output, context,
            ExpiryTime.Keep, Waiter.Background, TakeSerialNo(), out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? pending);
        return pending is null
            ? new ValueTask<ReadResult<TOutput>>(new ReadResult<TOutput>(ToStatus(status), output))
            : AwaitReadAsync(pending, cancellationToken);
    }

    /// <summary>Inserts or overwrites a value; awaits (rather than blocks) when the log must first make room.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the upsert itself still completes.</exception>
    public ValueTask<Status> UpsertAsync(TKey key, TValue value, CancellationToken cancellationToken = default) =>
        UpdateAsync<UpsertKind>(in key, in value, default!, default!, ExpiryTime.Keep, cancellationToken);

    /// <summary>
    /// Inserts or overwrites a value that expires as <paramref name="expiration"/> says (a time to live counts from
    /// this call); awaits (rather than blocks) when the log must first make room.
    /// </summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the upsert itself still completes.</exception>
    public ValueTask<Status> UpsertAsync(
        TKey key, TValue value, Expiration expiration, CancellationToken cancellationToken = default) =>
        UpdateAsync<UpsertKind>(in key, in value, default!, default!, ExpiryOf(expiration), cancellationToken);

    /// <summary>Read-modify-write, awaiting the device or log space as needed.</summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the current record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the update itself still completes.</exception>
    public ValueTask<Status> RMWAsync(
        TKey key, TInput input, TContext context = default!, CancellationToken cancellationToken = default) =>
        UpdateAsync<RmwKind>(in key, default!, in input, context, ExpiryTime.Keep, cancellationToken);

    /// <summary>
    /// Read-modify-write whose resulting value expires as <paramref name="expiration"/> says (a time to live counts
    /// from this call; <see cref="Expiration.Never"/> removes an expiry), awaiting the device or log space as needed.
    /// </summary>
    /// <returns><see cref="Status.Ok"/>.</returns>
    /// <exception cref="Devices.StorageDeviceException">The device could not read the current record.</exception>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the update itself still completes.</exception>
    public ValueTask<Status> RMWAsync(
        TKey key, TInput input, Expiration expiration, TContext context = default!,
        CancellationToken cancellationToken = default) =>
        UpdateAsync<RmwKind>(in key, default!, in input, context, ExpiryOf(expiration), cancellationToken);

    /// <summary>Deletes a key, awaiting log space or an earlier operation on the key as needed (never the device).</summary>
    /// <returns><see cref="Status.Ok"/>, or <see cref="Status.NotFound"/> if memory or the index shows the key absent
    /// (see <see cref="Delete(in TKey, TContext)"/>).</returns>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting;
    /// the delete itself still completes.</exception>
    public ValueTask<Status> DeleteAsync(
        TKey key, TContext context = default!, CancellationToken cancellationToken = default) =>
        UpdateAsync<DeleteKind>(in key, default!, default!, context, ExpiryTime.Keep, cancellationToken);

    /// <summary>
    /// Completes every pending operation of this session (those of the blocking methods, reported to their
    /// completion callbacks, and awaited ones), awaiting the device instead of blocking.
    /// </summary>
    /// <exception cref="InvalidOperationException">A protected scope of this session is open.</exception>
    /// <exception cref="Exception">As for <c>CompletePending(wait: true)</c>: every operation is finished first, then
    /// what failed operations threw is thrown, one as it is, several in an <see cref="AggregateException"/>.</exception>
    public async Task CompletePendingAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfInProtectedScope();
        ThrowIfDisposed();
        List<Exception>? failures = null;
        ContinuePendingOnce(PendingDriver.Caller, out _, ref failures);
        if (PendingCount == 0)
        {
            ThrowFailures(failures);
            return;
        }

        // Still on the caller's thread and outside any stretch: register before going on elsewhere.
        Interlocked.Increment(ref _detachedCompleters);
        Interlocked.Increment(ref _sharers);
        try
        {
            while (true)
            {
                Task progress = _progress.NextSignal;
                Task logSpace = _engine.Log.SpaceSignal;
                bool progressed;
                bool waitingForSpace;
                bool retrying;
                Lock();
                try
                {
                    progressed = ContinuePendingOnce(PendingDriver.Detached, out waitingForSpace, ref failures);
                    retrying = _ready.Count != 0;
                }
                finally
                {
                    Unlock();
                }

                if (PendingCount == 0)
                {
                    ThrowFailures(failures);
                    return;
                }

                if (progressed)
                {
                    continue;
                }

                await WaitAsync(waitingForSpace ? logSpace : progress, retrying, cancellationToken).ConfigureAwait(false);
            }
        }
        finally
        {
            Lock();
            Interlocked.Decrement(ref _detachedCompleters);
            Interlocked.Decrement(ref _sharers);
            Unlock();
        }
    }

    private void BeginAsync(CancellationToken cancellationToken)
    {
        ThrowIfInProtectedScope();
        cancellationToken.ThrowIfCancellationRequested();
    }

    private ValueTask<Status> UpdateAsync<TKind>(
        in TKey key, in TValue value, in TInput input, TContext context, long expiry,
        CancellationToken cancellationToken)
        where TKind : struct, IOperationKind
    {
        BeginAsync(cancellationToken);
        TOutput output = default!;
        OperationStatus status = Attempt<TKind>(in key, in value, in input, ref output, context, expiry, Waiter.Background,
            TakeSerialNo(), out PendingOperation<TKey, TValue, TInput, TOutput, TContext>? pending);
        return pending is null
            ? new ValueTask<Status>(ToStatus(status))
            : AwaitStatusAsync(pending, cancellationToken);
    }

    private async ValueTask<ReadResult<TOutput>> AwaitReadAsync(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> pending, CancellationToken cancellationToken)
    {
        DriveInBackground();
        (Status status, TOutput output) = await pending.Completion!.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        return new ReadResult<TOutput>(status, output);
    }

    private async ValueTask<Status> AwaitStatusAsync(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> pending, CancellationToken cancellationToken)
    {
        DriveInBackground();
        return (await pending.Completion!.Task.WaitAsync(cancellationToken).ConfigureAwait(false)).Status;
    }

    /// <summary>
    /// Waits for a signal; while operations are <paramref name="retrying"/>, at most <see cref="RecheckInterval"/>:
    /// fuzzy-region operations wait for the epoch, which signals nobody, so they are simply tried again. Otherwise every
    /// operation left waits for a device read or for the one before it on its key, and whoever ends either signals, so
    /// no timer is needed.
    /// </summary>
    private static async Task WaitAsync(Task signal, bool retrying, CancellationToken cancellationToken)
    {
        if (!retrying)
        {
            await signal.WaitAsync(cancellationToken).ConfigureAwait(false);
            return;
        }

        Task delay = Task.Delay(RecheckInterval, cancellationToken);
        await Task.WhenAny(signal, delay).ConfigureAwait(false);
        cancellationToken.ThrowIfCancellationRequested();
    }
}
