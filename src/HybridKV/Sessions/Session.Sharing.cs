using System.Runtime.CompilerServices;
using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// Who may use the session's state. A session has one caller, but while asynchronous operations are in flight a
/// background driver finishes them (so that the caller can issue more operations instead of driving each one), and
/// <see cref="CompletePendingAsync"/> goes on after its first await on another thread. Those parties register on the
/// caller's thread, outside any operation, and from then on every party takes the session's lock for each stretch of
/// work; a session used by its caller alone pays one field read per operation.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    // 1 while a party holds the session's state; stretches are short (one attempt, one pass), so waiters spin.
    private int _lock;

    // Parties other than the caller that may use the state: registered on the caller's thread outside any stretch,
    // unregistered under the lock after their last use, so the caller that reads 0 is alone until it registers one.
    private int _sharers;

    // Whether the caller took the lock for the stretch it is in.
    private bool _callerLocked;

    // Awaited operations the background driver is to finish; it stops when there are none.
    private int _backgroundCount;

    // 1 while a background driver is registered.
    private int _driverRunning;

    // CompletePendingAsync calls past their first await.
    private int _detachedCompleters;

    /// <summary>Starts the background driver if it is not running (on the caller's thread, after an attempt).</summary>
    private void DriveInBackground()
    {
        if (Interlocked.CompareExchange(ref _driverRunning, 1, 0) == 0)
        {
            Interlocked.Increment(ref _sharers);
            ThreadPool.UnsafeQueueUserWorkItem(static session => _ = session.DriveAsync(), this, preferLocal: false);
        }
    }

    /// <summary>
    /// Finishes awaited operations while any are in flight: continues what is ready, then waits for a device read, for
    /// log space, or (operations in the fuzzy region wait for the epoch, which signals nobody) a short while.
    /// </summary>
    private async Task DriveAsync()
    {
        while (true)
        {
            Task progress = _progress.NextSignal;
            Task logSpace = _engine.Log.SpaceSignal;
            bool progressed;
            bool waitingForSpace = false;
            Lock();
            try
            {
                if (Volatile.Read(ref _backgroundCount) == 0 || _epochEntry < 0)
                {
                    Volatile.Write(ref _driverRunning, 0);
                    Interlocked.Decrement(ref _sharers);
                    return;
                }

                progressed = ContinuePendingOnce(PendingDriver.Background, out waitingForSpace);
            }
#pragma warning disable CA1031 // Every awaiting caller receives it.
            catch (Exception error)
#pragma warning restore CA1031
            {
                FailContinuable(error);
                progressed = true;
            }
            finally
            {
                Unlock();
            }

            if (progressed)
            {
                // Wakes a caller waiting in CompletePending for the reports deferred to it.
                _progress.Signal();
            }
            else
            {
                await WaitAsync(waitingForSpace ? logSpace : progress, CancellationToken.None).ConfigureAwait(false);
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Lock()
    {
        if (Interlocked.CompareExchange(ref _lock, 1, 0) != 0)
        {
            LockContended();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void LockContended()
    {
        var spinner = new SpinWait();
        do
        {
            spinner.SpinOnce();
        }
        while (Volatile.Read(ref _lock) != 0 || Interlocked.CompareExchange(ref _lock, 1, 0) != 0);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Unlock() => Volatile.Write(ref _lock, 0);

    /// <summary>Takes the lock if another party is registered.</summary>
    /// <returns>Whether the lock was taken (pass it to <see cref="UnlockIf"/>).</returns>
    private bool LockIfShared()
    {
        if (Volatile.Read(ref _sharers) == 0)
        {
            return false;
        }

        Lock();
        return true;
    }

    private void UnlockIf(bool locked)
    {
        if (locked)
        {
            Unlock();
        }
    }

    /// <summary>The caller's stretch when other parties are registered: the lock, then protection.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void EnterShared()
    {
        Lock();
        _callerLocked = true;
        try
        {
            EnterProtection();
        }
        catch
        {
            _callerLocked = false;
            Unlock();
            throw;
        }
    }

    /// <summary>Whether work the caller cannot see is in flight: awaited operations or a detached completer.</summary>
    private bool HasBackgroundWork =>
        Volatile.Read(ref _backgroundCount) != 0 || Volatile.Read(ref _detachedCompleters) != 0;
}
