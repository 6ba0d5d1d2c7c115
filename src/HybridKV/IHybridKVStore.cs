using HybridKV.Checkpoints;

namespace HybridKV;

/// <summary>
/// What every HybridKV store offers whatever its key, value and callback types: its life cycle (recovery,
/// checkpoints, disposal) and the state that monitoring reads. The engine's store and every generated store implement
/// it, so that code hosting a store (dependency injection, a session pool, a health check) is written once.
/// </summary>
public interface IHybridKVStore : IDisposable
{
    /// <summary>The settings the store was created with.</summary>
    StoreSettings Settings { get; }

    /// <summary>The next logical address the log allocates: how much log has been written.</summary>
    long TailAddress { get; }

    /// <summary>The lowest address still part of the log.</summary>
    long BeginAddress { get; }

    /// <summary>The number of buckets the hash index has now.</summary>
    long IndexBucketCount { get; }

    /// <summary>The number of sessions open now.</summary>
    int OpenSessionCount { get; }

    /// <summary>Whether the store holds existing data that <see cref="RecoverAsync"/> has not recovered yet.</summary>
    bool IsRecoveryRequired { get; }

    /// <summary>Whether some session has issued an operation that no durable checkpoint holds yet.</summary>
    bool HasUncommittedOperations { get; }

    /// <summary>Why writing the log to its device failed, or <see langword="null"/> while it has not.</summary>
    Exception? DeviceError { get; }

    /// <summary>Takes a CPR checkpoint while sessions keep running; completes with its token once it is durable.</summary>
    /// <param name="kind">Index and log, or log only.</param>
    /// <param name="mode">Fold-over, snapshot, or automatic.</param>
    /// <param name="cancellationToken">Cancels waiting for a running checkpoint, or the index checkpoint.</param>
    Task<Guid> TakeCheckpointAsync(CheckpointKind kind, CheckpointMode mode, CancellationToken cancellationToken);

    /// <summary>Restores the newest (or the given) checkpoint that verifies; null when there is none.</summary>
    /// <param name="token">A checkpoint to recover instead of the newest.</param>
    /// <param name="progress">Receives the replay's progress.</param>
    /// <param name="cancellationToken">Abandons recovery; the store must then be disposed.</param>
    Task<RecoveryResult?> RecoverAsync(Guid? token, IProgress<RecoveryProgress>? progress,
        CancellationToken cancellationToken);
}

/// <summary>
/// A store whose sessions are of type <typeparamref name="TSession"/>, and which can be created from settings alone:
/// what a host needs to create, recover and share a store of a type it knows only as a type parameter.
/// </summary>
/// <typeparam name="TSelf">The store type itself.</typeparam>
/// <typeparam name="TSession">The store's session type.</typeparam>
public interface IHybridKVStore<TSelf, TSession> : IHybridKVStore
    where TSelf : IHybridKVStore<TSelf, TSession>
    where TSession : IHybridKVSession
{
    /// <summary>Creates a store over <paramref name="settings"/>, as its constructor does.</summary>
    /// <param name="settings">Sizes, device, checkpoints and logging; validated here.</param>
    static abstract TSelf Create(StoreSettings settings);

    /// <summary>Opens a session with the given identity, under which its commit points are recorded.</summary>
    /// <param name="id">The session's identity.</param>
    TSession NewSession(Guid id);

    /// <summary>Continues a session after recovery, telling which of its operations survived.</summary>
    /// <param name="id">The identity of the session to continue.</param>
    /// <param name="recovered">The session's recovered commit point (<see cref="CommitPoint.None"/> if none).</param>
    TSession ContinueSession(Guid id, out CommitPoint recovered);
}

/// <summary>
/// What every session offers whatever its store's types: its identity, its serial numbers and its durability, so that
/// a host can pool sessions and wait for commits without knowing the operations' types.
/// </summary>
public interface IHybridKVSession : IDisposable
{
    /// <summary>The session's identity, which <c>ContinueSession</c> takes after recovery.</summary>
    Guid Id { get; }

    /// <summary>The serial number of the last operation issued, or 0 before the first.</summary>
    long LastSerialNo { get; }

    /// <summary>The number of operations that went pending and have not been completed yet.</summary>
    int PendingCount { get; }

    /// <summary>The newest durable commit point of this session.</summary>
    CommitPoint DurableCommitPoint { get; }

    /// <summary>Completes once every operation up to <paramref name="serialNo"/> is in a durable checkpoint.</summary>
    /// <param name="serialNo">A serial number this session has issued.</param>
    /// <param name="cancellationToken">Stops waiting; the checkpoint itself is not affected.</param>
    Task WaitForCommitAsync(long serialNo, CancellationToken cancellationToken);

    /// <summary>Completes every pending operation of this session, awaiting the device instead of blocking.</summary>
    /// <param name="cancellationToken">Stops waiting.</param>
    Task CompletePendingAsync(CancellationToken cancellationToken);
}
