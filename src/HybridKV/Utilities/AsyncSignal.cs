namespace HybridKV.Utilities;

/// <summary>
/// A broadcast "something changed" signal that both blocking and asynchronous waiters can wait on. A waiter takes
/// <see cref="NextSignal"/> first, then re-checks its condition, then waits; so a signal between the check and the
/// wait is never missed.
/// </summary>
internal sealed class AsyncSignal
{
    // The task the next signal completes; null or completed while nobody took one. A waiter makes it, not the
    // signaller: a signal nobody waits for allocates nothing, and a writer that turns a page signals whoever waits
    // for page turns (compaction) without allocating their next task on its own thread.
    private TaskCompletionSource? _next;

    // Blocking waiters wait on these instead of a task (see WaitBlocking): signals so far, threads in WaitBlocking,
    // and the monitor they wait on.
    private long _signals;
    private int _blockedWaiters;
    private readonly object _gate = new();

    /// <summary>A task that completes at the next <see cref="Signal"/>.</summary>
    public Task NextSignal
    {
        get
        {
            while (true)
            {
                TaskCompletionSource? current = Volatile.Read(ref _next);
                if (current is not null && !current.Task.IsCompleted)
                {
                    return current.Task;
                }

                // Installed before the waiter checks its condition: a signal that misses it ran before that check,
                // which then sees what was signalled.
                var fresh = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                if (Interlocked.CompareExchange(ref _next, fresh, current) == current)
                {
                    return fresh.Task;
                }
            }
        }
    }

    /// <summary>
    /// What <see cref="WaitBlocking"/> waits to see change, taken as <see cref="NextSignal"/> is: before the waiter
    /// checks its condition.
    /// </summary>
    public long BlockingMark => Interlocked.Read(ref _signals);

    /// <summary>
    /// Blocks until a <see cref="Signal"/> after <paramref name="mark"/> (at once if one came already), or until
    /// <paramref name="timeout"/>; allocates nothing, where blocking on <see cref="NextSignal"/> made the signal
    /// allocate a task for every wait, and the wait an event (a session driving thousands of device reads waited once
    /// a read: 40 bytes a read).
    /// </summary>
    /// <returns>Whether a signal came.</returns>
    public bool WaitBlocking(long mark, TimeSpan timeout)
    {
        // Counted before the signals are read, and a signal counts itself before it reads this count (both with a full
        // fence): either the waiter sees the signal, or the signal sees the waiter and pulses the monitor, which the
        // waiter holds from its check until it waits.
        Interlocked.Increment(ref _blockedWaiters);
        try
        {
            lock (_gate)
            {
                while (Interlocked.Read(ref _signals) == mark)
                {
                    if (!Monitor.Wait(_gate, timeout))
                    {
                        return false;
                    }
                }

                return true;
            }
        }
        finally
        {
            Interlocked.Decrement(ref _blockedWaiters);
        }
    }

    /// <summary>Wakes every current waiter.</summary>
    public void Signal()
    {
        Interlocked.Increment(ref _signals);
        if (Volatile.Read(ref _blockedWaiters) != 0)
        {
            lock (_gate)
            {
                Monitor.PulseAll(_gate);
            }
        }

        // Completed or null when nobody took it since the last signal: then nothing happens.
        Volatile.Read(ref _next)?.TrySetResult();
    }
}

/// <summary>Waiting for a signal that may never come, as the store's retry loops do.</summary>
internal static class SignalWaits
{
    /// <summary>
    /// Completes when <paramref name="signal"/> does, after <paramref name="timeout"/>, or on cancellation, without
    /// throwing: the caller checks again what it waits for (and its token) either way.
    /// </summary>
    public static Task WaitOrTimeoutAsync(this Task signal, TimeSpan timeout, CancellationToken cancellationToken = default) =>
        signal.WaitAsync(timeout, cancellationToken).ContinueWith(static _ => { }, CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
}
