using System.Threading.Tasks.Sources;

namespace HybridKV.Devices;

/// <summary>
/// A reusable <see cref="IoRequest"/> that is its own <see cref="ValueTask"/>, completed on the thread pool as the
/// pool's other requests are (queued as itself): nothing is allocated per request (a page flush allocated its work
/// item, a completion source and its task). Taken from a pool by its owner; <see cref="OnConsumed"/> gives it back once
/// the one awaiter it has took the result.
/// </summary>
internal abstract class PooledIoRequest : IoRequest, IValueTaskSource, IThreadPoolWorkItem
{
    private ManualResetValueTaskSourceCore<bool> _core;
    private Exception? _error;

    /// <summary>The request as a task for the one awaiter it has.</summary>
    public ValueTask AsValueTask() => new(this, _core.Version);

    /// <summary>The blocking work.</summary>
    protected abstract void DoWork();

    /// <summary>Called once the result was taken: the request may go back to its pool.</summary>
    protected abstract void OnConsumed();

    public sealed override void Run()
    {
        try
        {
            DoWork();
        }
#pragma warning disable CA1031 // Every failure belongs to the request that caused it.
        catch (Exception error)
#pragma warning restore CA1031
        {
            _error = error;
        }

        ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
    }

    public sealed override void Cancel(CancellationToken cancellationToken)
    {
        _error = new OperationCanceledException(cancellationToken);
        ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
    }

    void IThreadPoolWorkItem.Execute()
    {
        Exception? error = _error;
        _error = null;
        if (error is null)
        {
            _core.SetResult(true);
        }
        else
        {
            _core.SetException(error);
        }
    }

    void IValueTaskSource.GetResult(short token)
    {
        try
        {
            _core.GetResult(token);
        }
        finally
        {
            _core.Reset();
            OnConsumed();
        }
    }

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token,
        ValueTaskSourceOnCompletedFlags flags) => _core.OnCompleted(continuation, state, token, flags);
}
