using HybridKV.Checkpoints;

namespace HybridKV.Sessions;

/// <summary>
/// Every session the store knows: open ones, closed ones whose last operations no checkpoint has recorded yet, and the
/// session table of the latest commit (CPR §2), which <c>ContinueSession</c> hands out.
/// </summary>
/// <remarks>
/// The table stays bounded by the sessions in use: a session disposed with operations not yet durable is named once
/// more, with its final point and marked closed, by the next commit, and by no commit after; one disposed with every
/// operation durable leaves at once and is left out of the next commit. A session the latest commit names keeps its
/// point for <c>ContinueSession</c> until then.
/// </remarks>
internal sealed class SessionRegistry
{
    private readonly object _lock = new();
    private readonly Dictionary<Guid, SessionCprState> _live = new();
    private Dictionary<Guid, SessionCommitMetadata> _committed = new();
    // Named by the latest commit, disposed since with nothing left to record: the next commit leaves them out.
    private readonly HashSet<Guid> _retiring = new();

    /// <summary>Signalled when a session's last pending operation completes (a strict checkpoint waits for that).</summary>
    public Utilities.AsyncSignal PendingDrained { get; } = new();

    /// <summary>The number of open sessions.</summary>
    public int OpenCount
    {
        get
        {
            lock (_lock)
            {
                return _live.Values.Count(s => !s.Closed);
            }
        }
    }

    /// <summary>
    /// Whether some session, open or closed but not yet recorded, issued an operation that no durable commit holds:
    /// what a checkpoint taken now would make durable.
    /// </summary>
    public bool AnyUncommitted()
    {
        lock (_lock)
        {
            foreach (SessionCprState state in _live.Values)
            {
                if (!state.AllDurable())
                {
                    return true;
                }
            }

            return false;
        }
    }

    /// <summary>Registers a new session running as <paramref name="version"/>, continuing from its recovered commit
    /// point if <paramref name="continueRecovered"/>.</summary>
    /// <exception cref="ArgumentException">A session with this id is open.</exception>
    public SessionCprState Register(Guid id, Func<long> version, bool continueRecovered, out CommitPoint recovered)
    {
        lock (_lock)
        {
            if (_live.TryGetValue(id, out SessionCprState? existing) && !existing.Closed)
            {
                throw new ArgumentException($"A session with id {id} is already open on this store.", nameof(id));
            }

            if (continueRecovered && existing is not null)
            {
                // Closed but not yet recorded by a checkpoint: it ran operations past its last commit, and may even
                // have crossed into the running checkpoint's next version; it simply goes on.
                existing.Closed = false;
                recovered = existing.Durable;
                return existing;
            }

            _retiring.Remove(id);
            recovered = continueRecovered && _committed.TryGetValue(id, out SessionCommitMetadata? committed)
                ? committed.ToCommitPoint()
                : CommitPoint.None;
            // The version is read under the lock, so a checkpoint's sweep sees this session either not at all (it
            // started after the sweep, so it is already at the new version) or at the version it then crosses from.
            var state = new SessionCprState(id, version(), recovered, PendingDrained);
            _live[id] = state;
            return state;
        }
    }

    /// <summary>
    /// Marks a session closed. When checkpoints are possible and some of its operations are not durable yet, it stays
    /// until a checkpoint has recorded them; otherwise it is forgotten at once.
    /// </summary>
    public void Close(SessionCprState state, bool keepForCheckpoint)
    {
        lock (_lock)
        {
            state.Closed = true;
            if (keepForCheckpoint && !state.AllDurable())
            {
                return;
            }

            if (_live.TryGetValue(state.Id, out SessionCprState? current) && ReferenceEquals(current, state))
            {
                _live.Remove(state.Id);
            }

            if (keepForCheckpoint && _committed.ContainsKey(state.Id))
            {
                _retiring.Add(state.Id);
            }
        }
    }

    /// <summary>
    /// Crosses every session still at the committed version into <paramref name="nextVersion"/> on its behalf (a
    /// session between operations never holds up a checkpoint), except, with <paramref name="strict"/>, sessions that
    /// still have pending operations of the committed version.
    /// </summary>
    /// <returns>Whether every session is now at <paramref name="nextVersion"/>.</returns>
    public bool TryCrossAll(long nextVersion, bool strict)
    {
        lock (_lock)
        {
            bool all = true;
            foreach (SessionCprState state in _live.Values)
            {
                all &= state.CrossTo(nextVersion, strict);
            }

            return all;
        }
    }

    /// <summary>Every session's CPR point for the version before <paramref name="nextVersion"/> (CPR §6.2.3).</summary>
    public IReadOnlyList<SweptSession> CollectPoints(long nextVersion)
    {
        lock (_lock)
        {
            var points = new List<SweptSession>(_live.Count);
            foreach (SessionCprState state in _live.Values)
            {
                state.CrossTo(nextVersion);
                points.Add(new SweptSession(state, state.CommitPointBefore(nextVersion), state.ClosedBefore(nextVersion)));
            }

            return points;
        }
    }

    /// <summary>
    /// The session table a checkpoint persists: the earlier table without the sessions that have left, updated with
    /// the points just taken.
    /// </summary>
    public IReadOnlyList<SessionCommitMetadata> TableWith(IReadOnlyList<SweptSession> points)
    {
        lock (_lock)
        {
            var table = new Dictionary<Guid, SessionCommitMetadata>(_committed.Count + points.Count);
            foreach (SessionCommitMetadata earlier in _committed.Values)
            {
                if (!earlier.Closed && !_retiring.Contains(earlier.Id))
                {
                    table[earlier.Id] = earlier;
                }
            }

            foreach (SweptSession swept in points)
            {
                table[swept.State.Id] = new SessionCommitMetadata(swept.State.Id, swept.Point.UntilSerialNo,
                    swept.Point.ExcludedSerialNos.ToArray(), swept.WasClosed);
            }

            return table.Values.OrderBy(s => s.Id).ToList();
        }
    }

    /// <summary>After a commit is durable: remembers its table, forgets closed sessions it recorded, and notifies.</summary>
    public void OnCommitted(IReadOnlyList<SessionCommitMetadata> table,
        IReadOnlyList<SweptSession> points)
    {
        lock (_lock)
        {
            _committed = table.ToDictionary(s => s.Id);
            _retiring.RemoveWhere(id => !_committed.ContainsKey(id));
            foreach (SweptSession swept in points)
            {
                // Only a session that was already closed when it crossed has all its operations in this commit; one
                // that closed after its CPR point ran more (its excluded operations at least), which the next
                // checkpoint must record.
                if (swept.WasClosed && _live.TryGetValue(swept.State.Id, out SessionCprState? current) &&
                    ReferenceEquals(current, swept.State))
                {
                    _live.Remove(swept.State.Id);
                }
            }
        }

        foreach (SweptSession swept in points)
        {
            swept.State.OnCommitted(swept.Point);
        }
    }

    /// <summary>Installs the session table of a recovered checkpoint.</summary>
    public void Restore(IReadOnlyList<SessionCommitMetadata> table)
    {
        lock (_lock)
        {
            _committed = table.ToDictionary(s => s.Id);
            _retiring.Clear();
        }
    }

    /// <summary>The recovered or last committed point of every session known.</summary>
    public IReadOnlyDictionary<Guid, CommitPoint> CommittedPoints
    {
        get
        {
            lock (_lock)
            {
                return _committed.ToDictionary(p => p.Key, p => p.Value.ToCommitPoint());
            }
        }
    }

    /// <summary>The sessions held in memory: open ones and closed ones waiting for a checkpoint (tests).</summary>
    internal int LiveCount
    {
        get
        {
            lock (_lock)
            {
                return _live.Count;
            }
        }
    }
}

/// <summary>A session as a checkpoint's sweep found it: its CPR point, and whether it was already closed at that point.</summary>
internal readonly record struct SweptSession(SessionCprState State, CommitPoint Point, bool WasClosed);
