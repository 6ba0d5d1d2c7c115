namespace HybridKV.Sessions;

/// <summary>
/// A stretch of a session's operations run under one epoch protection instead of one per operation (FASTER §2.3: a
/// thread stays protected and refreshes its epoch every few operations). Returned by
/// <see cref="Session{TKey, TValue, TInput, TOutput, TContext, TFunctions}.BeginProtectedScope"/>; disposing it ends
/// the protection. Disposing it twice, or a copy of it, does nothing more.
/// </summary>
/// <remarks>
/// While a scope is open the session holds back the epoch between its operations: pages cannot be evicted and a
/// checkpoint cannot advance past this session until it refreshes (every few operations, and on each
/// <c>CompletePending</c>). Keep scopes to a burst of operations on one thread; never keep one open while the thread
/// waits for something else, and end it before disposing the store.
/// </remarks>
public readonly struct ProtectedScope : IDisposable
{
    private readonly IProtectedScopeOwner? _owner;
    private readonly int _generation;

    internal ProtectedScope(IProtectedScopeOwner owner, int generation)
    {
        _owner = owner;
        _generation = generation;
    }

    /// <summary>Ends the protection the scope holds (if this scope is still the session's open one).</summary>
    public void Dispose() => _owner?.EndProtectedScope(_generation);
}

/// <summary>What a <see cref="ProtectedScope"/> ends: the session that opened it.</summary>
internal interface IProtectedScopeOwner
{
    /// <summary>Ends the scope numbered <paramref name="generation"/>, if it is the one still open.</summary>
    void EndProtectedScope(int generation);
}
