namespace HybridKV.Epochs;

/// <summary>The drain list of trigger actions (FASTER §2.3, "Trigger Actions").</summary>
internal sealed partial class LightEpoch
{
    /// <summary>Passed as the caller's entry by code that is not itself a protected participant.</summary>
    internal const int NoEntry = -1;

    private const int DrainListCapacity = 256;

    private readonly DrainItem[] _drainList;

    // Cached so that draining allocates nothing.
    private readonly Func<long, bool> _hasActionAtOrBelow;

    // Items published or being published; a scan is skipped while it is 0, which keeps Unprotect cheap.
    private int _drainCount;

    /// <summary>Whether any trigger action is waiting for its epoch to become safe.</summary>
    public bool HasPendingActions => Volatile.Read(ref _drainCount) > 0;

    /// <summary>The number of trigger actions waiting for their epoch to become safe.</summary>
    public int PendingActionCount => Volatile.Read(ref _drainCount);

    /// <summary>
    /// Increments the current epoch from c to c + 1 and arranges for <paramref name="onSafe"/> to run exactly once,
    /// on whichever participant first finds that c is safe (FASTER's BumpEpoch(Action)).
    /// </summary>
    /// <param name="onSafe">The trigger action.</param>
    /// <param name="callerEntry">
    /// The caller's own row if it is a protected participant, so that it can move itself forward when the drain list
    /// is full (it might otherwise be the one holding back the actions that would make room); <see cref="NoEntry"/>
    /// otherwise. A protected caller must hold no reference into epoch-protected memory when it passes its row.
    /// </param>
    /// <returns>The epoch c that must become safe before the action runs.</returns>
    public long BumpCurrentEpoch(Action onSafe, int callerEntry = NoEntry)
    {
        ArgumentNullException.ThrowIfNull(onSafe);
        return BumpCurrentEpoch(s_invoke, onSafe, 0, callerEntry);
    }

    private static readonly Action<object?, long> s_invoke = static (action, _) => ((Action)action!)();

    /// <summary>
    /// <see cref="BumpCurrentEpoch(Action, int)"/> with an action that takes <paramref name="state"/> and
    /// <paramref name="argument"/>: with a static action, a bump allocates nothing (the log bumps twice a page turn,
    /// and a closure for each was most of what a page turn allocated).
    /// </summary>
    public long BumpCurrentEpoch(Action<object?, long> onSafe, object? state, long argument, int callerEntry = NoEntry)
    {
        ArgumentNullException.ThrowIfNull(onSafe);
        ObjectDisposedException.ThrowIf(_disposed, this);
        long priorEpoch = Interlocked.Increment(ref _currentEpoch.Value) - 1;

        var spinner = new SpinWait();
        while (!TryPublish(priorEpoch, onSafe, state, argument))
        {
            if (callerEntry != NoEntry && IsProtected(callerEntry))
            {
                Refresh(callerEntry);
            }
            else
            {
                TryDrain();
            }

            spinner.SpinOnce();
        }

        TryDrain();
        if (HasActionAtOrBelow(priorEpoch))
        {
            // A participant leaving right now may have checked for actions before this one was published while its
            // unprotect store was not yet visible to the scan: flush every core's stores and look again, so that
            // either this scan sees it gone or its own check after leaving sees the action (Unprotect).
            Interlocked.MemoryBarrierProcessWide();
            TryDrain();
        }

        return priorEpoch;
    }

    private bool HasActionAtOrBelow(long epoch)
    {
        for (int i = 0; i < _drainList.Length; i++)
        {
            if (Volatile.Read(ref _drainList[i].Epoch) <= epoch)
            {
                return true;
            }
        }

        return false;
    }

    private bool TryPublish(long epoch, Action<object?, long> action, object? state, long argument)
    {
        for (int i = 0; i < _drainList.Length; i++)
        {
            ref DrainItem item = ref _drainList[i];
            if (Volatile.Read(ref item.Epoch) == DrainItem.Free &&
                Interlocked.CompareExchange(ref item.Epoch, DrainItem.Claimed, DrainItem.Free) == DrainItem.Free)
            {
                item.Action = action;
                item.State = state;
                item.Argument = argument;
                // Counted before it becomes visible, so that a participant that sees the epoch also sees the count.
                Interlocked.Increment(ref _drainCount);
                Volatile.Write(ref item.Epoch, epoch);
                return true;
            }
        }

        return false;
    }

    /// <summary>Recomputes the safe epoch and runs every published action whose epoch is now safe.</summary>
    internal void TryDrain()
    {
        long safe = ComputeNewSafeEpoch(_hasActionAtOrBelow);
        for (int i = 0; i < _drainList.Length; i++)
        {
            ref DrainItem item = ref _drainList[i];
            long epoch = Volatile.Read(ref item.Epoch);
            // Free and Claimed are larger than any real epoch, so they never pass this test.
            if (epoch <= safe && Interlocked.CompareExchange(ref item.Epoch, DrainItem.Claimed, epoch) == epoch)
            {
                Action<object?, long> action = item.Action!;
                object? state = item.State;
                long argument = item.Argument;
                item.Action = null;
                item.State = null;
                Volatile.Write(ref item.Epoch, DrainItem.Free);
                Interlocked.Decrement(ref _drainCount);
                action(state, argument);
            }
        }
    }

    private struct DrainItem
    {
        public const long Free = long.MaxValue;
        public const long Claimed = long.MaxValue - 1;

        /// <summary>The epoch that must become safe, or <see cref="Free"/> / <see cref="Claimed"/>.</summary>
        public long Epoch;

        public Action<object?, long>? Action;

        public object? State;

        public long Argument;
    }

    /// <summary>
    /// Completes once <paramref name="epoch"/> is safe: every participant protected in it or earlier has moved on.
    /// The caller must not be protected itself.
    /// </summary>
    public Task WaitUntilSafeAsync(long epoch, CancellationToken cancellationToken)
    {
        var safe = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        if (SafeEpoch >= epoch)
        {
            return Task.CompletedTask;
        }

        // An action bumped now waits for an epoch at least as late as the one asked about.
        BumpCurrentEpoch(() => safe.TrySetResult());
        return safe.Task.WaitAsync(cancellationToken);
    }
}
