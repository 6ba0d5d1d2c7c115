using HybridKV.Epochs;

using HybridKV.Tests.Support;

namespace HybridKV.Tests.Epochs;

[Trait("Category", "Epoch")]
public sealed class LightEpochTests
{
    [Fact]
    public void Action_runs_once_and_only_after_every_protected_participant_refreshed_past_it()
    {
        using var epoch = new LightEpoch(4);
        Assert.True(epoch.TryAcquireEntry(out int first));
        Assert.True(epoch.TryAcquireEntry(out int second));
        epoch.Protect(first);
        epoch.Protect(second);

        int runs = 0;
        long waitsFor = epoch.BumpCurrentEpoch(() => Interlocked.Increment(ref runs), first);
        Assert.Equal(0, runs);

        epoch.Refresh(first);
        Assert.Equal(0, runs);
        Assert.True(epoch.SafeEpoch < waitsFor);

        epoch.Refresh(second);
        Assert.Equal(1, runs);
        Assert.True(epoch.SafeEpoch >= waitsFor);

        epoch.Refresh(first);
        epoch.Refresh(second);
        epoch.Unprotect(first);
        epoch.Unprotect(second);
        Assert.Equal(1, runs);
        Assert.Equal(0, epoch.PendingActionCount);
    }

    [Fact]
    public void Bump_with_nobody_protected_runs_the_action_at_once()
    {
        using var epoch = new LightEpoch(2);
        int runs = 0;
        epoch.BumpCurrentEpoch(() => runs++);
        Assert.Equal(1, runs);
    }

    [Fact]
    public void A_participant_that_never_refreshes_holds_actions_back_until_it_unprotects()
    {
        using var epoch = new LightEpoch(4);
        Assert.True(epoch.TryAcquireEntry(out int laggard));
        Assert.True(epoch.TryAcquireEntry(out int worker));
        epoch.Protect(laggard);

        int runs = 0;
        for (int i = 0; i < 100; i++)
        {
            epoch.Protect(worker);
            epoch.BumpCurrentEpoch(() => Interlocked.Increment(ref runs), worker);
            epoch.Refresh(worker);
            epoch.Unprotect(worker);
        }

        Assert.Equal(0, runs);
        Assert.Equal(100, epoch.PendingActionCount);

        epoch.Unprotect(laggard);
        Assert.Equal(100, runs);
        Assert.Equal(0, epoch.PendingActionCount);
    }

    [Fact]
    public void Releasing_the_entry_of_a_laggard_lets_actions_go()
    {
        using var epoch = new LightEpoch(4);
        Assert.True(epoch.TryAcquireEntry(out int laggard));
        epoch.Protect(laggard);
        int runs = 0;
        epoch.BumpCurrentEpoch(() => runs++);
        Assert.Equal(0, runs);

        epoch.Unprotect(laggard);
        epoch.ReleaseEntry(laggard);
        Assert.Equal(1, runs);
    }

    [Fact]
    public void A_protected_bumper_makes_progress_when_the_drain_list_is_full()
    {
        using var epoch = new LightEpoch(2);
        Assert.True(epoch.TryAcquireEntry(out int entry));
        epoch.Protect(entry);
        int runs = 0;
        const int Bumps = 1000;
        for (int i = 0; i < Bumps; i++)
        {
            epoch.BumpCurrentEpoch(() => Interlocked.Increment(ref runs), entry);
        }

        epoch.Unprotect(entry);
        Assert.Equal(Bumps, runs);
    }

    [Fact]
    public void The_table_refuses_a_participant_beyond_its_capacity_and_reuses_released_rows()
    {
        using var epoch = new LightEpoch(3);
        var entries = new List<int>();
        for (int i = 0; i < 3; i++)
        {
            Assert.True(epoch.TryAcquireEntry(out int entry));
            entries.Add(entry);
        }

        Assert.Equal(3, entries.Distinct().Count());
        Assert.False(epoch.TryAcquireEntry(out _));

        epoch.ReleaseEntry(entries[1]);
        Assert.True(epoch.TryAcquireEntry(out int again));
        Assert.Equal(entries[1], again);
    }

    /// <summary>
    /// The reclamation guarantee that everything else rests on: a participant that saw an object while protected
    /// never sees it retired before it leaves, however many threads swap, bump and refresh at once.
    /// </summary>
    [Fact]
    public async Task Many_threads_bumping_and_refreshing_never_retire_an_object_still_in_use()
    {
        int threads = Math.Max(4, Environment.ProcessorCount * 2);
        int iterations = 20_000 * TestScale.Factor;
        using var epoch = new LightEpoch(threads);
        var shared = new Generation();
        int violations = 0;
        int retired = 0;
        int created = 0;

        void Work(int seed)
        {
            Assert.True(epoch.TryAcquireEntry(out int entry));
            var random = new Random(seed);
            for (int i = 0; i < iterations; i++)
            {
                epoch.Protect(entry);
                Generation seen = Volatile.Read(ref shared);
                if (seen.Retired != 0)
                {
                    // Reading a retired object is fine only if it was retired before we could have seen it,
                    // which the swap-then-bump order rules out.
                    Interlocked.Increment(ref violations);
                }

                for (int spin = random.Next(8); spin > 0; spin--)
                {
                    Thread.SpinWait(4);
                }

                if (Volatile.Read(ref seen.Retired) != 0)
                {
                    Interlocked.Increment(ref violations);
                }

                if (random.Next(16) == 0)
                {
                    var next = new Generation();
                    Interlocked.Increment(ref created);
                    Generation old = Interlocked.Exchange(ref shared, next);
                    epoch.BumpCurrentEpoch(
                        () =>
                        {
                            if (Interlocked.Exchange(ref old.Retired, 1) != 0)
                            {
                                Interlocked.Increment(ref violations);
                            }

                            Interlocked.Increment(ref retired);
                        },
                        entry);
                }
                else if (random.Next(4) == 0)
                {
                    epoch.Refresh(entry);
                    // Everything observed before the refresh may be gone; only what is read after it counts.
                    Generation after = Volatile.Read(ref shared);
                    if (after.Retired != 0)
                    {
                        Interlocked.Increment(ref violations);
                    }
                }

                epoch.Unprotect(entry);
            }

            epoch.ReleaseEntry(entry);
        }

        // Dedicated threads, whose failures reach the test through their tasks instead of ending the test host.
        await Task.WhenAll(Enumerable.Range(0, threads).Select(i =>
            Task.Factory.StartNew(() => Work(i), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default)));
        epoch.TryDrain();

        Assert.Equal(0, violations);
        Assert.True(created > 0);
        Assert.Equal(created, retired);
        Assert.Equal(0, epoch.PendingActionCount);
    }

    private sealed class Generation
    {
        public int Retired;
    }
}
