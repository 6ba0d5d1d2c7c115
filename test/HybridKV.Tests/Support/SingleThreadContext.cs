using System.Collections.Concurrent;

namespace HybridKV.Tests.Support;

/// <summary>
/// A synchronization context with one thread, as a UI or a legacy ASP.NET request has: every continuation that
/// captured it runs on that thread, so code that blocks it while waiting for such a continuation deadlocks.
/// </summary>
public sealed class SingleThreadContext : SynchronizationContext, IDisposable
{
    private readonly BlockingCollection<(SendOrPostCallback Callback, object? State)> _queue = new();

    public override void Post(SendOrPostCallback d, object? state) => _queue.Add((d, state));

    public override void Send(SendOrPostCallback d, object? state) =>
        throw new NotSupportedException("Send would block the context's only thread.");

    public void Dispose() => _queue.Dispose();

    /// <summary>Runs <paramref name="body"/> on a new thread under this context until it completes or the time is up.</summary>
    public static T Run<T>(Func<Task<T>> body, TimeSpan timeout)
    {
        using var context = new SingleThreadContext();
        T result = default!;
        Exception? error = null;
        var thread = new Thread(() =>
        {
            SetSynchronizationContext(context);
            Task<T> task = body();
            task.ContinueWith(_ => context._queue.CompleteAdding(), TaskScheduler.Default);
            foreach ((SendOrPostCallback callback, object? state) in context._queue.GetConsumingEnumerable())
            {
                callback(state);
            }

            try
            {
                result = task.GetAwaiter().GetResult();
            }
            catch (Exception e)
            {
                error = e;
            }
        });
        thread.Start();
        if (!thread.Join(timeout))
        {
            context._queue.CompleteAdding();
            throw new TimeoutException($"The body did not complete within {timeout}.");
        }

        if (error is not null)
        {
            throw new AggregateException(error);
        }

        return result;
    }
}
