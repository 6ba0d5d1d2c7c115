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
        var went = new TaskCompletionSource<(string? Thread, bool ReadDone)>(
            TaskCreationOptions.RunContinuationsAsynchronously);
        ContinuationThread.ResumeAwaitable.Awaiter awaiter =
            ContinuationThread.ResumeOn(thread, new ValueTask(read.Task)).GetAwaiter();
        Assert.False(awaiter.IsCompleted);
        awaiter.UnsafeOnCompleted(() => went.SetResult((Thread.CurrentThread.Name, read.Task.IsCompleted)));

        // Completed on a thread of the test's own, on which the continuation would otherwise run inline.
        var completer = new Thread(read.SetResult) { Name = "completer" };
        completer.Start();
        completer.Join();

        (string? ranOn, bool readDone) = await went.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(Name, ranOn);
        Assert.True(readDone, "the continuation ran after the read completed");
    }

    [Fact]
    public async Task Leave_moves_code_off_the_thread_to_the_thread_pool()
    {
        using var thread = new ContinuationThread(Name);
        var where = new TaskCompletionSource<(bool LeftAtOnce, string? Before, bool AfterOnPool)>(
            TaskCreationOptions.RunContinuationsAsynchronously);
        thread.Post(() =>
        {
            string? before = Thread.CurrentThread.Name;
            ContinuationThread.LeaveAwaitable.Awaiter leaving = ContinuationThread.Leave(thread).GetAwaiter();
            if (leaving.IsCompleted)
            {
                where.SetResult((true, before, false));
                return;
            }

            leaving.UnsafeOnCompleted(() => where.SetResult((false, before, Thread.CurrentThread.IsThreadPoolThread)));
        });

        (bool leftAtOnce, string? before, bool afterOnPool) = await where.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(Name, before);
        Assert.False(leftAtOnce, "on the thread, leaving it means going elsewhere");
        Assert.True(afterOnPool);
    }
}
