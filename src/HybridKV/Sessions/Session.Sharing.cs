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

    // 1 while the registered driver is parked: registered, but on no thread until something wakes it.
    private int _driverParked;

    // Waits of the driver that end at a signal or a timer, whichever comes first: only operations that retry need one.
    private long _timedWaits;

    /// <summary>How often the background driver waited with a timed recheck (for tests).</summary>
    internal long TimedWaits => Volatile.Read(ref _timedWaits);

    // CompletePendingAsync calls past their first await.
    private int _detachedCompleters;

    /// <summary>
    /// Registers the background driver if it is not (on the caller's thread, after parking an awaited operation), and
    /// wakes it if there is work it can do now. A registered driver with nothing to do is parked: no thread, no timer;
    /// a device read that lands wakes it.
    /// </summary>
    private void DriveInBackground()
    {
        if (Interlocked.CompareExchange(ref _driverRunning, 1, 0) == 0)
        {
            Interlocked.Increment(ref _sharers);
            Interlocked.Exchange(ref _driverParked, 1);
        }

        Lock();
        bool ready = _ready.Count != 0;
        Unlock();
        if (ready || Volatile.Read(ref _readsDone) is not null)
        {
            WakeDriver();
        }
    }

    /// <summary>Runs the parked background driver on the thread pool; nothing if it is running already.</summary>
    private void WakeDriver()
    {
        if (Volatile.Read(ref _driverParked) == 1 && Interlocked.Exchange(ref _driverParked, 0) == 1)
        {
            QueueDriver();
        }
    }

    /// <summary>
    /// Runs the parked background driver on this thread, which completed a device read and holds nothing: one thread
    /// hop less between the read and its awaiting caller. The driver's passes never block (an operation short of log
    /// space or in the fuzzy region is retried later), and it goes to the thread pool if the session is busy or it
    /// must wait.
    /// </summary>
    private void WakeDriverHere()
    {
        if (Volatile.Read(ref _driverParked) == 1 && Interlocked.Exchange(ref _driverParked, 0) == 1)
        {
            _ = DriveAsync(onCompletingThread: true);
        }
    }

    private void QueueDriver() =>
        ThreadPool.UnsafeQueueUserWorkItem(static session => _ = session.DriveAsync(onCompletingThread: false), this,
            preferLocal: false);

    /// <summary>
    /// Finishes awaited operations while any are in flight: continues what is ready; parks when every operation left
    /// waits for a device read or for the operation before it on its key (whoever ends either wakes it); waits for
    /// log space, or (operations in the fuzzy region wait for the epoch, which signals nobody) a short while.
    /// </summary>
    private async Task DriveAsync(bool onCompletingThread)
    {
        bool retrying = false;
        while (true)
        {
            // Taken before the pass only when operations are retrying, so that a wait after it misses no signal; a
            // driver that parks instead takes none (a taken signal allocates at every read that lands).
            Task? progress = retrying ? _progress.NextSignal : null;
            Task? logSpace = retrying ? _engine.Log.SpaceSignal : null;
            bool progressed;
            bool waitingForSpace = false;
            if (!onCompletingThread)
            {
                Lock();
            }
            else if (Interlocked.CompareExchange(ref _lock, 1, 0) != 0)
            {
                // The caller is in a stretch, or this thread is inside a pass of this session (a read that completed
                // at once): the completing thread neither spins nor waits, so the thread pool takes over.
                QueueDriver();
                return;
            }

            try
            {
                if (Volatile.Read(ref _backgroundCount) == 0 || _epochEntry < 0)
                {
                    Volatile.Write(ref _driverRunning, 0);
                    Interlocked.Decrement(ref _sharers);
                    return;
                }

                progressed = ContinuePendingOnce(PendingDriver.Background, out waitingForSpace);
                retrying = _ready.Count != 0;
                if (!progressed && !retrying)
                {
                    // Parked under the lock: a caller's pass after this one, which may leave work behind, sees it.
                    Interlocked.Exchange(ref _driverParked, 1);
                }
            }
#pragma warning disable CA1031 // Every awaiting caller receives it.
            catch (Exception error)
#pragma warning restore CA1031
            {
                FailContinuable(error);
                progressed = true;
                retrying = false;
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
            else if (!retrying)
            {
                // A read that landed during the pass found the driver running, so it is taken up here (unless a wake
                // since then took it up already).
                if (Volatile.Read(ref _readsDone) is null || Interlocked.Exchange(ref _driverParked, 0) == 0)
                {
                    return;
                }
            }
            else if (onCompletingThread)
            {
                // Operations must retry, which means waiting: not on the completing thread.
                QueueDriver();
                return;
            }
            else if (progress is not null)
            {
                Interlocked.Increment(ref _timedWaits);
                await WaitAsync(waitingForSpace ? logSpace! : progress, retrying: true, CancellationToken.None)
                    .ConfigureAwait(false);
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
