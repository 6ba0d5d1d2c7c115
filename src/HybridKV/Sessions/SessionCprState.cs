using HybridKV.Checkpoints;

namespace HybridKV.Sessions;

/// <summary>
/// A session's part in CPR (CPR §2, §6.2): its serial numbers, the version it runs as, its CPR point when it crosses
/// to the next version, and the commit point last made durable. Shared between the session and the checkpoint state
/// machine, which crosses sessions that are not inside an operation on their behalf, so that an idle session never
/// holds up a checkpoint.
/// </summary>
/// <remarks>
/// The session writes <c>_activeSerialNo</c> before <c>_nextSerialNo</c> and clears it before it leaves protection
/// at the end of an operation; the state machine reads them in the opposite order, under <see cref="_gate"/>: whichever
/// of them crosses first computes the same CPR point.
/// </remarks>
internal sealed class SessionCprState
{
    private readonly object _gate = new();
    private readonly List<(long SerialNo, TaskCompletionSource Completion)> _waiters = new();
    private long _version;
    private long _nextSerialNo;
    private long _activeSerialNo;
    private CommitPoint? _crossedAt;
    private long _crossedInto;
    private bool _closedWhenCrossed;
    private CommitPoint _durable;

    private readonly HashSet<long> _pendingSerialNos = new();
    private readonly Utilities.AsyncSignal _pendingDrained;

    public SessionCprState(Guid id, long version, CommitPoint recovered, Utilities.AsyncSignal pendingDrained)
    {
        Id = id;
        _pendingDrained = pendingDrained;
        _version = version;
        _durable = recovered;
        _nextSerialNo = recovered.UntilSerialNo + 1;
    }

    public Guid Id { get; }

    /// <summary>The CPR version the session runs as.</summary>
    public long Version => Volatile.Read(ref _version);

    /// <summary>Records an operation that went pending (it keeps its serial number until it completes).</summary>
    public void AddPending(long serialNo)
    {
        lock (_gate)
        {
            _pendingSerialNos.Add(serialNo);
        }
    }

    /// <summary>Records that a pending operation completed; the last one wakes a strict checkpoint waiting for it.</summary>
    public void RemovePending(long serialNo)
    {
        bool drained;
        lock (_gate)
        {
            drained = _pendingSerialNos.Remove(serialNo) && _pendingSerialNos.Count == 0;
        }

        if (drained)
        {
            _pendingDrained.Signal();
        }
    }

    /// <summary>Set once the session is disposed; it stays registered until a checkpoint has recorded it.</summary>
    public bool Closed { get; set; }

    /// <summary>Raised (outside any lock) when a commit of this session becomes durable.</summary>
    public Action<CommitPoint>? Committed { get; set; }

    public long NextSerialNo
    {
        get => Volatile.Read(ref _nextSerialNo);
        set => Volatile.Write(ref _nextSerialNo, value);
    }

    /// <summary>The commit point last made durable (or recovered).</summary>
    public CommitPoint Durable
    {
        get
        {
            lock (_gate)
            {
                return _durable;
            }
        }
    }

    /// <summary>Takes the serial number of a new operation.</summary>
    /// <exception cref="InvalidOperationException">Another operation of this session is in progress: the session is
    /// used from two threads at once.</exception>
    public long BeginOperation()
    {
        // A plain read of a field this method writes anyway: it catches calls that overlap (not two that start within
        // the same few nanoseconds), at no cost on the hot path, where an interlocked instruction would be a full fence.
        long active = _activeSerialNo;
        if (active != 0)
        {
            Utilities.ThrowHelper.ThrowSessionInUse(Id, active);
        }

        long serialNo = _nextSerialNo;
        Volatile.Write(ref _activeSerialNo, serialNo);
        Volatile.Write(ref _nextSerialNo, serialNo + 1);
        return serialNo;
    }

    /// <summary>The operation in progress finished, or was parked as pending.</summary>
    public void EndOperation() => Volatile.Write(ref _activeSerialNo, 0);

    /// <summary>
    /// Moves the session to <paramref name="version"/>, recording its CPR point for the version it leaves: every
    /// operation issued so far, except the one in progress and those pending (relaxed CPR), and none after. With
    /// <paramref name="strict"/>, a session with pending operations does not cross: they finish in the old version
    /// first (CPR §6.2.3), and the CPR point then excludes nothing.
    /// </summary>
    /// <returns>Whether the session is now at <paramref name="version"/>.</returns>
    public bool CrossTo(long version, bool strict = false)
    {
        lock (_gate)
        {
            if (_version >= version)
            {
                return true;
            }

            if (strict && _pendingSerialNos.Count > 0)
            {
                return false;
            }

            long next = Volatile.Read(ref _nextSerialNo);
            long active = Volatile.Read(ref _activeSerialNo);
            long until = active != 0 ? active - 1 : next - 1;
            long[] excluded = _pendingSerialNos.Where(s => s <= until).Order().ToArray();
            _crossedAt = new CommitPoint(until, excluded);
            _crossedInto = version;
            _closedWhenCrossed = Closed;
            Volatile.Write(ref _version, version);
            return true;
        }
    }

    /// <summary>
    /// The session's CPR point for the version before <paramref name="version"/>: the one taken when it crossed, or,
    /// for a session that started at <paramref name="version"/>, whatever was already durable.
    /// </summary>
    public CommitPoint CommitPointBefore(long version)
    {
        lock (_gate)
        {
            if (_version < version)
            {
                throw new InvalidOperationException($"Session {Id} has not crossed into version {version}.");
            }

            return _crossedInto == version ? _crossedAt! : _durable;
        }
    }

    /// <summary>
    /// Whether the session was already closed when it crossed into <paramref name="version"/>: only then does the
    /// commit of the version before hold all its operations. A session that closed after crossing (or that started at
    /// <paramref name="version"/>) ran operations of <paramref name="version"/>, which the next commit must record.
    /// </summary>
    public bool ClosedBefore(long version)
    {
        lock (_gate)
        {
            return _crossedInto == version && _closedWhenCrossed;
        }
    }

    /// <summary>
    /// Whether the durable commit point already holds every operation the session issued, so that no checkpoint has
    /// anything left to record for it (a disposed session in that state leaves the session table at once).
    /// </summary>
    public bool AllDurable()
    {
        lock (_gate)
        {
            return _pendingSerialNos.Count == 0 && _durable.ExcludedSerialNos.Count == 0 &&
                Volatile.Read(ref _nextSerialNo) - 1 == _durable.UntilSerialNo;
        }
    }

    /// <summary>Publishes a durable commit point and wakes the waiters it satisfies.</summary>
    public void OnCommitted(CommitPoint point)
    {
        List<TaskCompletionSource>? ready = null;
        lock (_gate)
        {
            if (point.UntilSerialNo < _durable.UntilSerialNo)
            {
                return;
            }

            _durable = point;
            for (int i = _waiters.Count - 1; i >= 0; i--)
            {
                if (Covers(point, _waiters[i].SerialNo))
                {
                    (ready ??= new()).Add(_waiters[i].Completion);
                    _waiters.RemoveAt(i);
                }
            }
        }

        ready?.ForEach(c => c.TrySetResult());
        Committed?.Invoke(point);
    }

    /// <summary>Completes once every operation up to <paramref name="serialNo"/> is durable.</summary>
    public Task WaitForCommitAsync(long serialNo, CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            if (Covers(_durable, serialNo))
            {
                return Task.CompletedTask;
            }

            var completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _waiters.Add((serialNo, completion));
            return completion.Task.WaitAsync(cancellationToken);
        }
    }

    private static bool Covers(CommitPoint point, long serialNo) =>
        point.UntilSerialNo >= serialNo && (point.ExcludedSerialNos.Count == 0 || point.ExcludedSerialNos[0] > serialNo);
}
