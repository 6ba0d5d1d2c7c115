namespace HybridKV.Utilities;

/// <summary>
/// A broadcast "something changed" signal that both blocking and asynchronous waiters can wait on. A waiter takes
/// <see cref="NextSignal"/> first, then re-checks its condition, then waits; so a signal between the check and the
/// wait is never missed.
/// </summary>
internal sealed class AsyncSignal
{
    private TaskCompletionSource _next = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>A task that completes at the next <see cref="Signal"/>.</summary>
    public Task NextSignal => Volatile.Read(ref _next).Task;

    /// <summary>Wakes every current waiter.</summary>
    public void Signal()
    {
        var fresh = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Interlocked.Exchange(ref _next, fresh).TrySetResult();
    }
}
