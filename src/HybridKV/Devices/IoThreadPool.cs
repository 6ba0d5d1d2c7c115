using System.Collections.Concurrent;

namespace HybridKV.Devices;

/// <summary>
/// A few dedicated threads that run blocking file I/O. On a machine with two cores, blocking I/O on thread-pool
/// threads would occupy the very workers that sessions run on; dedicated threads keep the two apart, and completions
/// continue on the thread pool.
/// </summary>
internal sealed class IoThreadPool : IDisposable
{
    private readonly BlockingCollection<WorkItem> _queue = new(new ConcurrentQueue<WorkItem>());
    private readonly Thread[] _threads;

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
    public ValueTask Run(Action work, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled(cancellationToken);
        }

        var completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        try
        {
            _queue.Add(new WorkItem(work, completion, cancellationToken), CancellationToken.None);
        }
        catch (InvalidOperationException)
        {
            throw new ObjectDisposedException(nameof(IoThreadPool), "The device's I/O threads have stopped.");
        }

        return new ValueTask(completion.Task);
    }

    private void Loop()
    {
        foreach (WorkItem item in _queue.GetConsumingEnumerable())
        {
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
        _queue.CompleteAdding();
        foreach (Thread thread in _threads)
        {
            thread.Join();
        }

        _queue.Dispose();
    }

    private readonly record struct WorkItem(Action Work, TaskCompletionSource Completion, CancellationToken CancellationToken);
}
