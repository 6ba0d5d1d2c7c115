namespace HybridKV.Extensions.Hosting;

/// <summary>
/// One pooled session, rented for the caller's exclusive use until the lease is disposed:
/// <c>await using var lease = await pool.RentAsync(cancellationToken);</c>. Disposing completes the session's pending
/// operations and returns it to the pool; after that <see cref="Session"/> throws, so a handler cannot go on using a
/// session that another request now holds.
/// </summary>
/// <typeparam name="TSession">The store's session type.</typeparam>
public sealed class SessionLease<TSession> : IAsyncDisposable
    where TSession : class, IHybridKVSession
{
    private readonly ILeaseOwner<TSession> _owner;
    private TSession? _session;

    internal SessionLease(TSession session, ILeaseOwner<TSession> owner)
    {
        _session = session;
        _owner = owner;
    }

    /// <summary>The rented session: use it from one caller at a time (across awaits is fine) until the lease is disposed.</summary>
    /// <exception cref="ObjectDisposedException">The lease was disposed: the session is back in the pool.</exception>
    public TSession Session => _session ?? throw new ObjectDisposedException(nameof(SessionLease<TSession>),
        "This lease was disposed and its session returned to the pool; rent another one.");

    /// <summary>
    /// Completes the session's pending operations, then waits until every operation issued through it so far is in a
    /// durable checkpoint, asking for one at once (group commit: requests arriving together share a checkpoint). The
    /// session stays rented meanwhile; <c>RunDurableAsync</c> returns it before waiting instead.
    /// </summary>
    /// <param name="cancellationToken">Stops waiting; the operations and the checkpoint are not affected.</param>
    /// <exception cref="ObjectDisposedException">The lease was disposed.</exception>
    /// <exception cref="InvalidOperationException">The store is stopping.</exception>
    /// <exception cref="Exception">The checkpoint failed (say, <see cref="Devices.StorageDeviceException"/>): the
    /// operations are not known to be durable.</exception>
    public async Task CommitAsync(CancellationToken cancellationToken = default)
    {
        TSession session = Session;
        if (session.PendingCount > 0)
        {
            await session.CompletePendingAsync(cancellationToken).ConfigureAwait(false);
        }

        long serialNo = session.LastSerialNo;
        if (serialNo > 0)
        {
            await _owner.WaitDurableAsync(session.WaitForCommitAsync(serialNo, CancellationToken.None),
                cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Completes the session's pending operations and returns it to the pool; harmless when repeated.</summary>
    /// <exception cref="Exception">A pending operation failed as it completed (the session is returned all the same).</exception>
    public ValueTask DisposeAsync()
    {
        TSession? session = Interlocked.Exchange(ref _session, null);
        return session is null ? ValueTask.CompletedTask : _owner.ReturnAsync(session);
    }
}

/// <summary>What a lease needs of its pool.</summary>
/// <typeparam name="TSession">The store's session type.</typeparam>
internal interface ILeaseOwner<TSession>
{
    /// <summary>Completes the session's pending operations and puts it back.</summary>
    ValueTask ReturnAsync(TSession session);

    /// <summary>Asks for checkpoints until <paramref name="durable"/> completes.</summary>
    Task WaitDurableAsync(Task durable, CancellationToken cancellationToken);
}
