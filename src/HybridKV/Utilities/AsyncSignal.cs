namespace HybridKV.Utilities;

/// <summary>
/// A broadcast "something changed" signal that both blocking and asynchronous waiters can wait on. A waiter takes
/// <see cref="NextSignal"/> first, then re-checks its condition, then waits; so a signal between the check and the
/// wait is never missed.
/// </summary>
internal sealed class AsyncSignal
{
    private TaskCompletionSource _next = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // 1 once a waiter took the current task: a signal nobody can be waiting for completes nothing and allocates
    // nothing (a session signals this at every device read that lands).
    private int _taken;

    /// <summary>A task that completes at the next <see cref="Signal"/>.</summary>
    public Task NextSignal
    {
        get
        {
            // Marked before the task is read: a signal that finds no mark ran before this waiter's own check of its
            // condition, which then sees what was signalled.
            Interlocked.Exchange(ref _taken, 1);
            return Volatile.Read(ref _next).Task;
        }
    }

    /// <summary>Wakes every current waiter.</summary>
    public void Signal()
    {
        if (Interlocked.Exchange(ref _taken, 0) == 0)
        {
            return;
        }

        var fresh = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Interlocked.Exchange(ref _next, fresh).TrySetResult();
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
