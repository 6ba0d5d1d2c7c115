using System.Runtime.CompilerServices;

namespace HybridKV.Utilities;

/// <summary>
/// A thread of its own that runs the continuations posted to it, one at a time and in order, and sleeps on a monitor
/// (never spinning) while it has none: background work that waits for the device a hundred times a second resumes here
/// instead of on the thread pool. A pool worker woken for each such continuation spun and yielded the processor after
/// it (the runtime's wait for more work) for as long again as the continuation ran: a fifth to a third of compaction's
/// processor time, taken from the core a writer runs on.
/// </summary>
/// <remarks>
/// A continuation posted once the thread was stopped runs on the thread pool, so that no awaited work is lost. Code
/// that completes a task others await must leave the thread first (<see cref="Leave"/>), or their continuations would
/// run here.
/// </remarks>
internal sealed class ContinuationThread : IDisposable
{
    // Guarded by itself; the thread waits on it.
    private readonly Queue<Action> _queue = new();
    private readonly Thread _thread;
    private bool _stopped;

    public ContinuationThread(string name)
    {
        _thread = new Thread(Run) { IsBackground = true, Name = name };
        _thread.UnsafeStart();
    }

    /// <summary>Whether continuations wait to run here (a moment's view).</summary>
    public bool HasQueued
    {
        get
        {
            lock (_queue)
            {
                return _queue.Count > 0;
            }
        }
    }

    /// <summary>Runs <paramref name="continuation"/> on the thread, after those posted before it.</summary>
    public void Post(Action continuation)
    {
        lock (_queue)
        {
            if (!_stopped)
            {
                _queue.Enqueue(continuation);
                if (_queue.Count == 1)
                {
                    Monitor.Pulse(_queue);
                }

                return;
            }
        }

        ThreadPool.UnsafeQueueUserWorkItem(static continuation => continuation(), continuation, preferLocal: false);
    }

    /// <summary>Awaits <paramref name="read"/>, then goes on on this thread (or, for null, where the read completes).</summary>
    public static ResumeAwaitable ResumeOn(ContinuationThread? thread, ValueTask read) => new(read, thread);

    /// <summary>Goes on on this thread after the continuations queued here now, or at once if there are none: a long
    /// loop on the thread lets the others run.</summary>
    public YieldAwaitable YieldIfOthersWait() => new(this);

    /// <summary>Goes on on the thread pool if running on this thread (or on <paramref name="thread"/> null: at
    /// once).</summary>
    public static LeaveAwaitable Leave(ContinuationThread? thread) => new(thread);

    // Optimized at once: the thread never leaves this loop, so it would otherwise run its first-tier code for ever.
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void Run()
    {
        while (true)
        {
            Action next;
            lock (_queue)
            {
                while (_queue.Count == 0)
                {
                    if (_stopped)
                    {
                        return;
                    }

                    Monitor.Wait(_queue);
                }

                next = _queue.Dequeue();
            }

            next();
        }
    }

    /// <summary>Stops the thread once it ran what was posted; later posts run on the thread pool.</summary>
    public void Dispose()
    {
        lock (_queue)
        {
            _stopped = true;
            Monitor.Pulse(_queue);
        }

        if (Thread.CurrentThread != _thread)
        {
            _thread.Join();
        }
    }

    /// <summary>Runs <paramref name="continuation"/> in the execution context of the caller of an awaiter's
    /// <c>OnCompleted</c> (the unsafe variants flow none, as the async machinery restores its own).</summary>
    private static Action WithCallersContext(Action continuation) =>
        ExecutionContext.Capture() is { } context
            ? () => ExecutionContext.Run(context, static state => ((Action)state!)(), continuation)
            : continuation;

    /// <summary>See <see cref="ResumeOn"/>.</summary>
    internal readonly struct ResumeAwaitable(ValueTask read, ContinuationThread? thread)
    {
        public Awaiter GetAwaiter() => new(read.ConfigureAwait(false).GetAwaiter(), thread);

        internal readonly struct Awaiter(
            ConfiguredValueTaskAwaitable.ConfiguredValueTaskAwaiter read, ContinuationThread? thread)
            : ICriticalNotifyCompletion
        {
            public bool IsCompleted => read.IsCompleted;

            public void GetResult() => read.GetResult();

            public void OnCompleted(Action continuation) => UnsafeOnCompleted(WithCallersContext(continuation));

            public void UnsafeOnCompleted(Action continuation)
            {
                ContinuationThread? target = thread;
                read.UnsafeOnCompleted(target is null ? continuation : () => target.Post(continuation));
            }
        }
    }

    /// <summary>See <see cref="YieldIfOthersWait"/>.</summary>
    internal readonly struct YieldAwaitable(ContinuationThread thread)
    {
        public Awaiter GetAwaiter() => new(thread);

        internal readonly struct Awaiter(ContinuationThread thread) : ICriticalNotifyCompletion
        {
            public bool IsCompleted => !thread.HasQueued;

            // An awaiter's result, which the await pattern asks of the instance.
#pragma warning disable CA1822
            public void GetResult()
            {
            }
#pragma warning restore CA1822

            public void OnCompleted(Action continuation) => thread.Post(WithCallersContext(continuation));

            public void UnsafeOnCompleted(Action continuation) => thread.Post(continuation);
        }
    }

    /// <summary>See <see cref="Leave"/>.</summary>
    internal readonly struct LeaveAwaitable(ContinuationThread? thread)
    {
        public Awaiter GetAwaiter() => new(thread);

        internal readonly struct Awaiter(ContinuationThread? thread) : ICriticalNotifyCompletion
        {
            public bool IsCompleted => thread is null || Thread.CurrentThread != thread._thread;

            // An awaiter's result, which the await pattern asks of the instance.
#pragma warning disable CA1822
            public void GetResult()
            {
            }
#pragma warning restore CA1822

            public void OnCompleted(Action continuation) =>
                ThreadPool.QueueUserWorkItem(static continuation => continuation(), continuation, preferLocal: false);

            public void UnsafeOnCompleted(Action continuation) =>
                ThreadPool.UnsafeQueueUserWorkItem(static continuation => continuation(), continuation, preferLocal: false);
        }
    }
}
