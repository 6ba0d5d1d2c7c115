using HybridKV.Utilities;

namespace HybridKV.Tests.Utilities;

/// <summary>
/// <see cref="ContinuationThread"/>: what is posted runs on its one thread in order, nothing posted is lost once it
/// stopped, an awaited read goes on there whoever completed it, and <see cref="ContinuationThread.Leave"/> moves code off
/// it.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class ContinuationThreadTests
{
    private const string Name = "continuation thread test";

    [Fact]
    public async Task What_is_posted_runs_on_the_thread_in_the_order_posted()
    {
        using var thread = new ContinuationThread(Name);
        const int Count = 1_000;
        var ran = new List<(int Index, string? Thread)>();
        var last = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        for (int i = 0; i < Count; i++)
        {
            int index = i;
            // Only the thread touches the list until the last one has run.
            thread.Post(() =>
            {
                ran.Add((index, Thread.CurrentThread.Name));
                if (index == Count - 1)
                {
                    last.SetResult();
                }
            });
        }

        await last.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(Enumerable.Range(0, Count), ran.Select(r => r.Index));
        Assert.All(ran, r => Assert.Equal(Name, r.Thread));
    }

    [Fact]
    public async Task What_is_posted_after_it_stopped_runs_on_the_thread_pool()
    {
        var thread = new ContinuationThread(Name);
        thread.Dispose();
        var ran = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);

        thread.Post(() => ran.SetResult(Thread.CurrentThread.IsThreadPoolThread));

        Assert.True(await ran.Task.WaitAsync(TimeSpan.FromSeconds(30)));
    }

    [Fact]
    public async Task An_awaited_read_goes_on_on_the_thread_whichever_thread_completes_it()
    {
        using var thread = new ContinuationThread(Name);
        var read = new TaskCompletionSource();
        var went = new TaskCompletionSource<string?>(TaskCreationOptions.RunContinuationsAsynchronously);
        ContinuationThread.ResumeAwaitable.Awaiter awaiter =
            ContinuationThread.ResumeOn(thread, new ValueTask(read.Task)).GetAwaiter();
        Assert.False(awaiter.IsCompleted);
        awaiter.UnsafeOnCompleted(() => went.SetResult(Thread.CurrentThread.Name));

        // Completed on a thread of the test's own, on which the continuation would otherwise run inline.
        var completer = new Thread(read.SetResult) { Name = "completer" };
        completer.Start();
        completer.Join();

        Assert.Equal(Name, await went.Task.WaitAsync(TimeSpan.FromSeconds(30)));
    }

    [Fact]
    public async Task Leave_moves_code_off_the_thread_and_nowhere_from_elsewhere()
    {
        using var thread = new ContinuationThread(Name);
        var where = new TaskCompletionSource<(string? Before, bool AfterOnPool, string? After)>(
            TaskCreationOptions.RunContinuationsAsynchronously);
        thread.Post(async () =>
        {
            string? before = Thread.CurrentThread.Name;
            await ContinuationThread.Leave(thread);
            where.SetResult((before, Thread.CurrentThread.IsThreadPoolThread, Thread.CurrentThread.Name));
        });

        (string? before, bool afterOnPool, string? after) = await where.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(Name, before);
        Assert.True(afterOnPool);
        Assert.NotEqual(Name, after);

        int caller = Environment.CurrentManagedThreadId;
        var leaving = ContinuationThread.Leave(thread).GetAwaiter();
        Assert.True(leaving.IsCompleted, "off the thread, leaving it is nothing to do");
        Assert.Equal(caller, Environment.CurrentManagedThreadId);
    }
}
