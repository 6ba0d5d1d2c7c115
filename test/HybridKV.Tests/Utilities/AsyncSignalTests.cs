using HybridKV.Utilities;

namespace HybridKV.Tests.Utilities;

/// <summary>
/// <see cref="AsyncSignal.WaitBlocking"/>: a signal after the mark always ends the wait (whether it comes before the
/// waiter blocks or after), one before the mark never does, and a blocking wait allocates nothing.
/// </summary>
[Trait("Category", "Operations")]
public sealed class AsyncSignalTests
{
    [Fact]
    public void A_signal_after_the_mark_ends_a_blocking_wait_whether_it_comes_before_or_during_the_wait()
    {
        var signal = new AsyncSignal();
        // Before: the wait returns at once.
        long mark = signal.BlockingMark;
        signal.Signal();
        Assert.True(signal.WaitBlocking(mark, TimeSpan.FromMinutes(1)));

        // During (or before; the outcome is the same): many rounds against a signalling thread, each waited for
        // with a timeout far beyond any scheduling delay. A lost wake-up would end a round with false.
        const int Rounds = 2_000;
        using var go = new SemaphoreSlim(0);
        var signaller = new Thread(() =>
        {
            for (int i = 0; i < Rounds; i++)
            {
                go.Wait();
                signal.Signal();
            }
        });
        signaller.Start();
        for (int i = 0; i < Rounds; i++)
        {
            long before = signal.BlockingMark;
            go.Release();
            Assert.True(signal.WaitBlocking(before, TimeSpan.FromMinutes(1)), $"round {i} was not woken");
        }

        signaller.Join();
    }

    [Fact]
    public void A_signal_before_the_mark_does_not_end_a_blocking_wait()
    {
        var signal = new AsyncSignal();
        signal.Signal();
        long mark = signal.BlockingMark;
        Assert.False(signal.WaitBlocking(mark, TimeSpan.FromMilliseconds(20)));
    }

    [Fact]
    public void Signals_and_blocking_waits_allocate_nothing()
    {
        var signal = new AsyncSignal();
        long mark = signal.BlockingMark;
        signal.Signal();
        signal.WaitBlocking(mark, TimeSpan.FromSeconds(1));
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1_000; i++)
        {
            mark = signal.BlockingMark;
            signal.Signal();
            signal.WaitBlocking(mark, TimeSpan.FromSeconds(1));
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }

    [Fact]
    public async Task A_signal_still_completes_the_task_an_asynchronous_waiter_took()
    {
        var signal = new AsyncSignal();
        Task next = signal.NextSignal;
        Assert.False(next.IsCompleted);
        signal.Signal();
        await next.WaitAsync(TimeSpan.FromMinutes(1));
    }
}
