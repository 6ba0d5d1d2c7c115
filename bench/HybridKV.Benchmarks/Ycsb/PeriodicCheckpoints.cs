namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// A peer's checkpoints on a schedule, as HybridKV takes its own (<see cref="StoreSettings.CheckpointInterval"/>): one
/// every interval, started on a timer, the next only after the last has finished, and none on a tick with no operation
/// since the last (<see cref="Touch"/>; HybridKV skips such ticks too). A checkpoint that fails stops the
/// schedule, and <see cref="Dispose"/> throws what it threw, so that a run never reports a ratio over checkpoints that
/// did not happen.
/// </summary>
internal sealed class PeriodicCheckpoints : IDisposable
{
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private long _committed;
    private int _touched;
    private int _running;

    /// <param name="every">The interval between checkpoints' starts.</param>
    /// <param name="checkpoint">Takes one checkpoint and returns once it is durable.</param>
    public PeriodicCheckpoints(TimeSpan every, Func<CancellationToken, Task> checkpoint) =>
        _loop = Task.Run(() => RunAsync(every, checkpoint));

    /// <summary>Operations were issued (called by the store's workers, once a batch).</summary>
    public void Touch() => Volatile.Write(ref _touched, 1);

    /// <summary>
    /// Waits until a checkpoint has followed the last operations (and none runs), so that none runs while another
    /// store is measured: the runner's settle, as HybridKV's waits until nothing is uncommitted.
    /// </summary>
    public void Settle()
    {
        var clock = System.Diagnostics.Stopwatch.StartNew();
        while ((Volatile.Read(ref _touched) != 0 || Volatile.Read(ref _running) != 0) && !_loop.IsCompleted &&
               clock.Elapsed < TimeSpan.FromMinutes(1))
        {
            // The runner's pace, not synchronisation: the schedule's own timer decides, this only looks.
            Thread.Sleep(5);
        }
    }

    /// <summary>Checkpoints that finished.</summary>
    public long Committed => Interlocked.Read(ref _committed);

    private async Task RunAsync(TimeSpan every, Func<CancellationToken, Task> checkpoint)
    {
        using var timer = new PeriodicTimer(every);
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false))
            {
                // Running before the operations are taken, so that Settle never sees neither.
                Volatile.Write(ref _running, 1);
                try
                {
                    if (Interlocked.Exchange(ref _touched, 0) == 0)
                    {
                        continue;
                    }

                    await checkpoint(_stop.Token).ConfigureAwait(false);
                    Interlocked.Increment(ref _committed);
                }
                finally
                {
                    Volatile.Write(ref _running, 0);
                }
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
