using System.Runtime.CompilerServices;
using HybridKV.Utilities;

namespace HybridKV.Sessions;

/// <summary>
/// Epoch protection for the session's operations: one protect and unprotect per attempt, or, inside a
/// <see cref="ProtectedScope"/>, one protection held across many operations and refreshed on a fixed cadence.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IProtectedScopeOwner
{
    /// <summary>The most operations a protected scope may run between two epoch refreshes.</summary>
    public const int MaxRefreshInterval = 1 << 16;

    // Set while a protected scope is open: attempts then neither protect nor unprotect, and waits step outside.
    private bool _scopeOpen;
    private int _scopeGeneration;
    private int _refreshInterval;
    private int _attemptsUntilRefresh;

    /// <summary>
    /// Holds epoch protection across the operations that follow, until the returned scope is disposed, instead of
    /// entering and leaving protection in every operation. The epoch is refreshed every
    /// <paramref name="refreshInterval"/> operations and on every <see cref="CompletePending"/>; waits for log space
    /// or the device step outside protection. Worth it for bursts of operations on records in memory.
    /// </summary>
    /// <param name="refreshInterval">Operations between two epoch refreshes, from 1 to <see cref="MaxRefreshInterval"/>.
    /// Larger values cost less per operation but hold back evictions and checkpoints longer.</param>
    /// <returns>The scope; dispose it (with <c>using</c>) to end the protection.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="refreshInterval"/> is out of range.</exception>
    /// <exception cref="InvalidOperationException">A scope of this session is already open.</exception>
    /// <exception cref="ObjectDisposedException">The session or the store is disposed.</exception>
    public ProtectedScope BeginProtectedScope(int refreshInterval = 256)
    {
        if (refreshInterval < 1 || refreshInterval > MaxRefreshInterval)
        {
            throw new ArgumentOutOfRangeException(nameof(refreshInterval), refreshInterval,
                $"The refresh interval must be from 1 to {MaxRefreshInterval} operations.");
        }

        ThrowIfDisposed();
        if (_scopeOpen)
        {
            throw new InvalidOperationException(
                "This session already has an open protected scope; dispose it before beginning another.");
        }

        bool locked = LockIfShared();
        try
        {
            if (HasBackgroundWork)
            {
                throw new InvalidOperationException(
                    "Asynchronous operations or CompletePendingAsync of this session are still in flight; await them " +
                    "before beginning a protected scope, which would hold the epoch while they wait.");
            }

            ProtectOrThrow();
            _scopeOpen = true;
        }
        finally
        {
            UnlockIf(locked);
        }

        _refreshInterval = _attemptsUntilRefresh = refreshInterval;
        return new ProtectedScope(this, ++_scopeGeneration);
    }

    /// <summary>Whether a protected scope of this session is open.</summary>
    public bool InProtectedScope => _scopeOpen;

    /// <summary>The session's row in the epoch table (for tests).</summary>
    internal int EpochEntry => _epochEntry;

    void IProtectedScopeOwner.EndProtectedScope(int generation)
    {
        if (_scopeOpen && generation == _scopeGeneration)
        {
            _scopeOpen = false;
            _epoch.Unprotect(_epochEntry);
        }
    }

    /// <summary>Begins a stretch of the caller's work: the session's lock if it is shared, then protection.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Enter()
    {
        if (Volatile.Read(ref _sharers) != 0)
        {
            EnterShared();
        }
        else
        {
            EnterProtection();
        }
    }

    /// <summary>Ends a stretch of the caller's work.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Exit()
    {
        ExitProtection();
        if (_callerLocked)
        {
            _callerLocked = false;
            Unlock();
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void EnterProtection()
    {
        if (_scopeOpen)
        {
            RefreshOnCadence();
        }
        else
        {
            ThrowIfDisposed();
            ProtectOrThrow();
        }

        RefreshView();
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ExitProtection()
    {
        if (!_scopeOpen)
        {
            _epoch.Unprotect(_epochEntry);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void RefreshOnCadence()
    {
        if (--_attemptsUntilRefresh == 0)
        {
            RefreshScope();
        }
    }

    /// <summary>Moves an open scope's protection to the current epoch, letting evictions and checkpoints proceed.</summary>
    private void RefreshScope()
    {
        _attemptsUntilRefresh = _refreshInterval;
        _epoch.Refresh(_epochEntry);
    }

    private void ProtectOrThrow()
    {
        _epoch.Protect(_epochEntry);
        // Checked after protecting: the store waits for protected sessions before freeing memory, so a store that
        // is not disposed now stays usable until this session leaves protection.
        if (_store.IsDisposed)
        {
            _epoch.Unprotect(_epochEntry);
            _scopeOpen = false;
            ThrowHelper.ThrowObjectDisposed(_store.GetType().Name);
        }
    }

    /// <summary>
    /// Blocks until <paramref name="signal"/> or the recheck interval, outside protection: what the session waits
    /// for (a page turn, a flush, the fuzzy region becoming safe) needs every session's epoch to move on.
    /// </summary>
    private void WaitUnprotected(Utilities.AsyncSignal signal, long mark)
    {
        if (!_scopeOpen)
        {
            signal.WaitBlocking(mark, RecheckInterval);
            return;
        }

        _epoch.Unprotect(_epochEntry);
        try
        {
            signal.WaitBlocking(mark, RecheckInterval);
        }
        finally
        {
            ProtectOrThrow();
        }
    }

    private void ThrowIfInProtectedScope()
    {
        if (_scopeOpen)
        {
            throw new InvalidOperationException(
                "Asynchronous operations cannot run inside a protected scope: they may await, and the scope would " +
                "hold back the epoch while they do. Dispose the scope first.");
        }
    }
}
