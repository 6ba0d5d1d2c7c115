using System.Collections.Concurrent;

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
/// </remarks>
internal sealed class IoThreadPool : IDisposable
{
    private readonly ConcurrentQueue<WorkItem> _first = new();
    private readonly ConcurrentQueue<WorkItem> _rest = new();
    private readonly SemaphoreSlim _queued = new(0);
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

        var completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_gate)
        {
            if (_stopping)
            {
                throw new ObjectDisposedException(nameof(IoThreadPool), "The device's I/O threads have stopped.");
            }

            (first ? _first : _rest).Enqueue(new WorkItem(work, completion, cancellationToken));
            _queued.Release();
        }

        return new ValueTask(completion.Task);
    }

    private void Loop()
    {
        while (true)
        {
            _queued.Wait();
            if (!_first.TryDequeue(out WorkItem item) && !_rest.TryDequeue(out item))
            {
                // One of the releases Dispose adds once nothing more can be queued: everything queued has run.
                return;
            }

            if (item.CancellationToken.IsCancellationRequested)
            {
                item.Completion.TrySetCanceled(item.CancellationToken);
                continue;
            }

            try
            {
                item.Work();
                item.Completion.TrySetResult();
            }
#pragma warning disable CA1031 // Every failure belongs to the request that caused it.
            catch (Exception error)
#pragma warning restore CA1031
            {
                item.Completion.TrySetException(error);
            }
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
        }

        _queued.Release(_threads.Length);
        foreach (Thread thread in _threads)
        {
            thread.Join();
        }

        _queued.Dispose();
    }

    private readonly record struct WorkItem(Action Work, TaskCompletionSource Completion, CancellationToken CancellationToken);
}
