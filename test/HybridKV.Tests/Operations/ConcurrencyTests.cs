using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

[Trait("Category", "Operations")]
public sealed class ConcurrencyTests
{
    /// <summary>
    /// The lost-update anomaly of FASTER §6.2 made observable: sessions on thread-pool threads increment a few hot
    /// counters while their inserts push the read-only offset through the log, so hot records keep crossing from the
    /// mutable into the fuzzy and read-only regions. No increment may be lost.
    /// </summary>
    [Theory]
    [InlineData(2)]
    [InlineData(4)]
    [InlineData(8)]
    public async Task RMW_increments_on_hot_keys_are_never_lost_while_the_read_only_offset_moves(int sessions)
    {
        const int HotKeys = 4;
        int incrementsPerSession = 20_000 * TestScale.Factor;
        var settings = TestStores.Small(memoryBytes: 1L << 26, pageSizeBits: 9, mutableFraction: 0.005,
            indexBuckets: 1L << 14);
        using var store = TestStores.Create(settings);
        long readOnlyBefore = store.ReadOnlyAddress;
        int pendings = 0;

        using var start = new Barrier(sessions);
        Task[] workers = Enumerable.Range(0, sessions).Select(id => Task.Run(() =>
        {
            using var session = store.NewSession();
            start.SignalAndWait();
            for (int i = 0; i < incrementsPerSession; i++)
            {
                if (session.RMW(i % HotKeys, 1) == Status.Pending)
                {
                    Interlocked.Increment(ref pendings);
                }

                // A fresh key per increment grows the log, which moves the read-only offset.
                session.Upsert(1_000_000L * (id + 1) + i, i);
                if (i % 64 == 0)
                {
                    session.CompletePending();
                }
            }

            Assert.True(session.CompletePending(wait: true));
        })).ToArray();
        // Bounded: a hang fails the test instead of stalling the run.
        await Task.WhenAll(workers).WaitAsync(TimeSpan.FromMinutes(3));

        using var reader = store.NewSession();
        for (long key = 0; key < HotKeys; key++)
        {
            Assert.Equal((long)sessions * incrementsPerSession / HotKeys, reader.ReadValue(key, out Status status));
            Assert.Equal(Status.Ok, status);
        }

        Assert.True(store.ReadOnlyAddress > readOnlyBefore, "the read-only offset never moved");
        // With four sessions and more, hot records are caught in the fuzzy region and their RMWs go pending.
        Assert.True(sessions < 4 || pendings > 0, "no RMW went pending in the fuzzy region");
    }

    [Fact]
    public void A_session_continues_on_other_threads_between_operations()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        var threads = new List<Thread>();
        using var finished = new ManualResetEventSlim();
        for (int hop = 0; hop < 4; hop++)
        {
            // Each stretch of operations runs on another OS thread, one after the other, as continuations after awaits
            // do; the threads stay alive until the end, so that their ids stay distinct.
            using var done = new ManualResetEventSlim();
            Exception? failed = null;
            var thread = new Thread(() =>
            {
                try
                {
                    for (long i = 0; i < 50; i++)
                    {
                        session.RMW(i % 10, 1);
                    }
                }
                catch (Exception error)
                {
                    // Reported by the test, instead of ending the test host.
                    failed = error;
                }

                done.Set();
                finished.Wait();
            }) { IsBackground = true };
            thread.Start();
            done.Wait();
            threads.Add(thread);
            Assert.Null(failed);
        }

        int distinct = threads.Select(t => t.ManagedThreadId).Distinct().Count();
        finished.Set();
        threads.ForEach(t => t.Join());
        Assert.Equal(4, distinct);
        for (long key = 0; key < 10; key++)
        {
            Assert.Equal(20, session.ReadValue(key, out Status status));
            Assert.Equal(Status.Ok, status);
        }
    }
}
