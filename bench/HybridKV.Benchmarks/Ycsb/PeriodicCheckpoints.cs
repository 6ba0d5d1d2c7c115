namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// A peer's checkpoints on a schedule, as HybridKV takes its own (<see cref="StoreSettings.CheckpointInterval"/>): one
/// every interval, started on a timer, the next only after the last has finished. A checkpoint that fails stops the
/// schedule, and <see cref="Dispose"/> throws what it threw, so that a run never reports a ratio over checkpoints that
/// did not happen.
/// </summary>
internal sealed class PeriodicCheckpoints : IDisposable
{
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private long _committed;

    /// <param name="every">The interval between checkpoints' starts.</param>
    /// <param name="checkpoint">Takes one checkpoint and returns once it is durable.</param>
    public PeriodicCheckpoints(TimeSpan every, Func<CancellationToken, Task> checkpoint) =>
        _loop = Task.Run(() => RunAsync(every, checkpoint));

    /// <summary>Checkpoints that finished.</summary>
    public long Committed => Interlocked.Read(ref _committed);

    private async Task RunAsync(TimeSpan every, Func<CancellationToken, Task> checkpoint)
    {
        using var timer = new PeriodicTimer(every);
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false))
            {
                await checkpoint(_stop.Token).ConfigureAwait(false);
                Interlocked.Increment(ref _committed);
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
        }
    }

    /// <summary>Stops the schedule, cancelling a checkpoint in progress, and throws what a failed one threw.</summary>
    public void Dispose()
    {
        _stop.Cancel();
        try
        {
            _loop.GetAwaiter().GetResult();
        }
        finally
        {
            _stop.Dispose();
        }
    }
}
