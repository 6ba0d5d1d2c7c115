namespace HybridKV.Devices;

/// <summary>
/// A few dedicated threads that run blocking file I/O. On a machine with two cores, blocking I/O on thread-pool
/// threads would occupy the very workers that sessions run on; dedicated threads keep the two apart, and completions
/// continue on the thread pool.
/// </summary>
/// <remarks>
/// Writes go first. They are the log's flushes and a checkpoint's fsync: until a flush completes, the head cannot move
/// and no operation that needs a new record can go on. Behind a queue of thousands of reads (a larger-than-memory
/// store issues one per missed key, faster than two threads serve them), a flush waited seconds, and the store stopped
/// for seconds at a time while its reads drained.
/// <para>
/// An idle thread blocks on the gate's monitor, without spinning first: a <see cref="SemaphoreSlim"/> spun and yielded
/// the processor some twenty times per wait (26,000-47,000 involuntary context switches per thread in 10 s
/// of a log flushing 200 pages a second), on a machine whose two cores the store's writers and its compaction share.
/// </para>
/// </remarks>
internal sealed class IoThreadPool : IDisposable
{
    // Both queues and the flag are guarded by the gate.
    private readonly Queue<WorkItem> _first = new();
    private readonly Queue<WorkItem> _rest = new();
    private readonly object _gate = new();
    private readonly Thread[] _threads;
    private bool _stopping;

    public IoThreadPool(int threads, string name)
    {
        _threads = new Thread[threads];
        for (int i = 0; i < threads; i++)
        {
            _threads[i] = new Thread(Loop) { IsBackground = true, Name = $"{name} I/O {i}" };
            _threads[i].Start();
        }
    }

    /// <summary>Queues blocking work; the task completes (on the thread pool) when it has run.</summary>
    /// <param name="work">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the work if it has not started.</param>
    /// <param name="first">Runs before every queued request that is not (a write: see the remarks).</param>
    public ValueTask Run(Action work, CancellationToken cancellationToken, bool first = false)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled(cancellationToken);
        }

        var request = new DelegateRequest(work);
        Enqueue(request, first, cancellationToken);
        return new ValueTask(request.Completion.Task);
    }

    /// <summary>Queues <paramref name="request"/>, which completes itself.</summary>
    /// <param name="request">The blocking work.</param>
    /// <param name="first">Runs before every queued request that is not (a write: see the remarks).</param>
    /// <param name="cancellationToken">Cancels the work if it has not started.</param>
    public void Run(IoRequest request, bool first, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            request.Cancel(cancellationToken);
            return;
        }

        Enqueue(request, first, cancellationToken);
    }

    private void Enqueue(IoRequest request, bool first, CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            if (_stopping)
            {
                throw new ObjectDisposedException(nameof(IoThreadPool), "The device's I/O threads have stopped.");
            }

            (first ? _first : _rest).Enqueue(new WorkItem(request, cancellationToken));
            Monitor.Pulse(_gate);
        }
    }

    private void Loop()
    {
        while (true)
        {
            WorkItem item;
            lock (_gate)
            {
                while (!_first.TryDequeue(out item) && !_rest.TryDequeue(out item))
                {
                    if (_stopping)
                    {
                        // Nothing more can be queued, and everything queued has run.
                        return;
                    }

                    Monitor.Wait(_gate);
                }
            }

            if (item.CancellationToken.IsCancellationRequested)
            {
                item.Request.Cancel(item.CancellationToken);
                continue;
            }

            item.Request.Run();
        }
    }

    /// <summary>Runs what is queued, then stops the threads.</summary>
    public void Dispose()
    {
        lock (_gate)
        {
            if (_stopping)
            {
                return;
            }

            _stopping = true;
            Monitor.PulseAll(_gate);
        }

        foreach (Thread thread in _threads)
        {
            thread.Join();
        }
    }

    private readonly record struct WorkItem(IoRequest Request, CancellationToken CancellationToken);

    /// <summary>Work queued by <see cref="IoThreadPool.Run(Action, CancellationToken, bool)"/>: completes a task, whose
    /// continuations run on the thread pool.</summary>
    private sealed class DelegateRequest(Action work) : IoRequest
    {
        public TaskCompletionSource Completion { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override void Run()
        {
            try
            {
                work();
                Completion.TrySetResult();
            }
#pragma warning disable CA1031 // Every failure belongs to the request that caused it.
            catch (Exception error)
#pragma warning restore CA1031
            {
                Completion.TrySetException(error);
            }
        }

        public override void Cancel(CancellationToken cancellationToken) => Completion.TrySetCanceled(cancellationToken);
    }
}
