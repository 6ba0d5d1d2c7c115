using HybridKV.Devices;

namespace HybridKV.Tests.Devices;

/// <summary>
/// The I/O threads of a file device serve writes (the log's flushes, a checkpoint's fsync) before queued reads: a
/// flush behind thousands of reads stopped a larger-than-memory store for seconds at a time.
/// </summary>
[Trait("Category", "LargerThanMemory")]
public sealed class IoThreadPoolTests
{
    [Fact]
    public async Task A_write_queued_behind_reads_runs_before_them()
    {
        using var pool = new IoThreadPool(1, "test");
        var started = new TaskCompletionSource();
        var release = new TaskCompletionSource();
        var order = new List<string>();
        Task busy = pool.Run(() =>
        {
            started.SetResult();
            release.Task.Wait();
        }, CancellationToken.None).AsTask();
        await started.Task;

        var reads = Enumerable.Range(0, 5)
            .Select(i => pool.Run(() => { lock (order) { order.Add($"read {i}"); } }, CancellationToken.None).AsTask())
            .ToList();
        Task write = pool.Run(() => { lock (order) { order.Add("write"); } }, CancellationToken.None, first: true).AsTask();
        release.SetResult();
        await busy;
        await Task.WhenAll([.. reads, write]);

        Assert.Equal(["write", "read 0", "read 1", "read 2", "read 3", "read 4"], order);
    }

    [Fact]
    public async Task Disposing_runs_everything_queued_and_then_refuses_more()
    {
        var pool = new IoThreadPool(2, "test");
        int ran = 0;
        Task[] queued = [.. Enumerable.Range(0, 100).Select(i =>
            pool.Run(() => Interlocked.Increment(ref ran), CancellationToken.None, first: i % 3 == 0).AsTask())];
        pool.Dispose();

        await Task.WhenAll(queued);
        Assert.Equal(100, ran);
        // Refused at once, before anything is queued: Run itself throws.
        Assert.Throws<ObjectDisposedException>(() => { _ = pool.Run(() => { }, CancellationToken.None).AsTask(); });
    }
}
