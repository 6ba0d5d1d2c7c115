using HybridKV.Devices;
using HybridKV.Log;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Lifecycle;

/// <summary>
/// A log that follows its live data when writers outrun compaction (issue 18): writers wait at page turns while a
/// compaction runs and the log is over its limit, never for longer than the limit's wait, and compaction's liveness
/// from the index keeps every live value where index entries are shared by several keys.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class LogBudgetTests : IDisposable
{
    // 100 rounds of 4,000 keys (twice the memory's records, so that updates append): 12.8 MB of log against 64 KiB
    // of memory, far more than any limit lets go unheld.
    private const int Keys = 4_000;
    private const int Rounds = 100;

    // A failure guard for conditions that hold within milliseconds: never a synchronisation delay.
    private static readonly TimeSpan Guard = TimeSpan.FromSeconds(60);

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Automatic_compaction_holds_writers_at_page_turns_while_it_catches_up_and_lets_them_go_after_it()
    {
        var reads = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with
        {
            LogCompactionRatio = 2,
            LogCompactionMinBytes = 4 * StoreOnDevice.PageSize,
            LogSizeLimitRatio = 2,
            LogSizeLimitMaxWait = TimeSpan.FromMinutes(1),
        });
        using var session = store.NewSession();
        HybridLog log = store.Engine.Log;
        // Compaction's first read of the log waits: the compaction runs and frees nothing until the test lets it.
        device.HoldReads = reads.Task;

        // Rounds until a compaction started and waits for its first read (from then on it frees nothing), then at
        // most Rounds more: those cannot all go through unheld.
        int lastRound = 0;
        Task writer = Task.Run(() =>
        {
            using var writing = store.NewSession();
            int startedAt = -1;
            for (int r = 1; startedAt < 0 || r - startedAt < Rounds; r++)
            {
                Assert.True(r < 100_000, "no compaction started");
                Write(writing, r);
                Volatile.Write(ref lastRound, r);
                if (startedAt < 0 && device.ReadCount > 0)
                {
                    startedAt = r;
                }
            }
        });

        Assert.True(SpinWait.SpinUntil(() => log.PageTurnsHeld > 0 || writer.IsCompleted, Guard),
            "the writer was neither held nor done");
        Assert.False(writer.IsCompleted, $"{Rounds} rounds over {Keys:N0} keys went on while compaction could not run " +
            $"(compactions {store.LogCompaction!.Compactions}, held {log.PageTurnsHeld}, reads {device.ReadCount}, log {store.TailAddress - store.BeginAddress})");
        Assert.True(log.PageTurnsHeld > 0);

        device.HoldReads = null;
        reads.SetResult();
        await writer.WaitAsync(Guard);

        var model = new Dictionary<long, long>();
        for (long k = 0; k < Keys; k++)
        {
            model[k] = Volatile.Read(ref lastRound) * 1_000_000L + k;
        }

        Churn.AssertMatches(session, Keys, model);
        Assert.True(store.LogCompaction!.Compactions > 0, "compaction ran");
    }

    [Fact]
    public async Task After_a_compaction_that_held_writers_the_next_one_starts_before_the_log_reaches_the_ratio_again()
    {
        var reads = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var logs = new CollectingLoggerFactory();
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with
        {
            LogCompactionRatio = 3,
            LogCompactionMinBytes = 4 * StoreOnDevice.PageSize,
            LogSizeLimitRatio = 3,
            LogSizeLimitMaxWait = TimeSpan.FromMinutes(1),
            LoggerFactory = logs,
        });
        HybridLog log = store.Engine.Log;
        device.HoldReads = reads.Task;

        // Rounds until a page turn is held (the first compaction waits for its first read meanwhile); the writer then
        // ends its round and stops, so the log never again grows to 3x its live data. The writer has a thread of its
        // own and the test waits without holding one, so that the compaction's continuations find a pool thread and
        // it starts as soon as the log passes 3x (a starved pool let the log grow a hundredfold first).
        int stop = 0;
        Task writer = Task.Factory.StartNew(() =>
        {
            using var writing = store.NewSession();
            for (int r = 1; Volatile.Read(ref stop) == 0; r++)
            {
                Assert.True(r < 100_000, "no page turn was held");
                Write(writing, r);
            }
        }, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);

        Assert.True(await Eventually(() => log.PageTurnsHeld > 0 || writer.IsCompleted), "the writer was neither held nor done");
        Volatile.Write(ref stop, 1);
        device.HoldReads = null;
        reads.SetResult();
        await writer.WaitAsync(Guard);

        // The first compaction freed the oldest half of the device part (dead records): the log is under 3x but over
        // 1.25x the live data, and only a policy that starts early after holding writers compacts again.
        Assert.True(await Eventually(() => store.LogCompaction!.Compactions >= 2),
            $"no compaction after the one that held writers (log {store.TailAddress - store.BeginAddress} bytes, " +
            $"{Keys * 32} live)");
        Assert.Contains(logs.Entries, e => e.EventId == 13);
    }

    /// <summary>Whether <paramref name="condition"/> holds within <see cref="Guard"/>, checked every millisecond
    /// without holding a pool thread in between.</summary>
    private static async Task<bool> Eventually(Func<bool> condition)
    {
        var deadline = System.Diagnostics.Stopwatch.StartNew();
        while (!condition())
        {
            if (deadline.Elapsed > Guard)
            {
                return false;
            }

            await Task.Delay(1);
        }

        return true;
    }

    private static void Write(HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session,
        int round)
    {
        for (long k = 0; k < Keys; k++)
        {
            session.Upsert(k, round * 1_000_000L + k);
        }
    }

    [Fact]
    public async Task A_hold_makes_writers_wait_at_the_page_turn_until_it_is_released()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        HybridLog log = store.Engine.Log;
        log.HoldWritersAbove(0, store.Engine.LogCompactionEntry, TimeSpan.FromMinutes(1));

        Task writer = Task.Run(() =>
        {
            using var writing = store.NewSession();
            writing.Preload(count: 4 * StoreOnDevice.PageSize / 32 + 1);
        });

        Assert.True(SpinWait.SpinUntil(() => log.PageTurnsHeld > 0 || writer.IsCompleted, Guard),
            "the writer was neither held nor done");
        Assert.False(writer.IsCompleted, "the writer filled four pages under a hold");
        long tail = store.TailAddress;
        Assert.True(tail <= 2 * StoreOnDevice.PageSize, $"the tail moved to {tail} under a hold");

        log.ReleaseWriters();
        await writer.WaitAsync(Guard);
        Assert.Equal((Status.Ok, 7L), session.ReadNow(7));
    }

    [Fact]
    public async Task A_held_log_never_passes_its_limit_by_the_page_a_turn_opens()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        HybridLog log = store.Engine.Log;
        long page = StoreOnDevice.PageSize;
        // One byte short of the end of the page after the tail's: opening that page would pass the limit.
        long limit = ((store.TailAddress / page) + 2) * page - 1 - store.BeginAddress;
        log.HoldWritersAbove(limit, store.Engine.LogCompactionEntry, TimeSpan.FromMinutes(1));

        Task writer = Task.Run(() =>
        {
            using var writing = store.NewSession();
            writing.Preload(count: 4 * page / 32 + 1);
        });

        Assert.True(SpinWait.SpinUntil(() => log.PageTurnsHeld > 0 || writer.IsCompleted, Guard),
            "the writer was neither held nor done");
        Assert.False(writer.IsCompleted, "the writer filled four pages under a hold");
        Assert.True(store.TailAddress - store.BeginAddress <= limit,
            $"the log grew to {store.TailAddress - store.BeginAddress} bytes under a hold at {limit}");

        log.ReleaseWriters();
        await writer.WaitAsync(Guard);
    }

    [Fact]
    public async Task A_hold_paused_for_copies_lets_writers_add_only_as_much_as_is_copied()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        HybridLog log = store.Engine.Log;
        long page = StoreOnDevice.PageSize;
        long limit = ((store.TailAddress / page) + 1) * page - store.BeginAddress;
        log.HoldWritersAbove(limit, store.Engine.LogCompactionEntry, TimeSpan.FromMinutes(1));
        log.PauseHold(copyBytes: page);

        Task writer = Task.Run(() =>
        {
            using var writing = store.NewSession();
            writing.Preload(count: 8 * page / 32);
        });

        Assert.True(SpinWait.SpinUntil(() => log.PageTurnsHeld > 0 || writer.IsCompleted, Guard),
            "the writer was neither held nor done");
        Assert.False(writer.IsCompleted, "the writer filled eight pages while the hold was paused for one page of copies");
        Assert.True(store.TailAddress - store.BeginAddress <= limit + page,
            $"the log grew to {store.TailAddress - store.BeginAddress} bytes under a hold at {limit} paused for {page}");

        log.ResumeHold();
        log.ReleaseWriters();
        await writer.WaitAsync(Guard);
    }

    [Fact]
    public async Task A_hold_that_nothing_releases_delays_each_page_turn_at_most_its_wait_and_never_stops_writers()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        HybridLog log = store.Engine.Log;
        // A compaction that never ends: with no wait allowed, each page turn is refused once and then opens.
        log.HoldWritersAbove(0, store.Engine.LogCompactionEntry, TimeSpan.Zero);

        Task writer = Task.Run(() =>
        {
            using var writing = store.NewSession();
            writing.Preload(count: 8 * StoreOnDevice.PageSize / 32);
        });

        await writer.WaitAsync(Guard);
        Assert.True(log.PageTurnsHeld > 0, "the hold refused no page turn");
        log.ReleaseWriters();
    }

    [Fact]
    public async Task Compaction_keeps_every_live_value_when_index_entries_are_shared_by_many_keys()
    {
        // Every key in one bucket with one of 32 tags: a chain that reaches the device at a newer record is, for
        // many records, another key's, and only the exact trace may decide.
        string directory = _directory.NewSubdirectory();
        // No memory compaction: it copies live records forward in the background as pages leave memory, which decides,
        // by timing alone, whether any live record is left on the device for this compaction to copy.
        using var store = StoreOnDevice.Create(
            StoreOnDevice.Settings(directory) with { MemoryCompactionMaxLiveFraction = 0 }, HashMode.FewTagsOneBucket);
        using var session = store.NewSession();
        const int keys = 600;
        Dictionary<long, long> model = Churn.Run(session, keys, rounds: 8, deleteEvery: 5);
        // Other keys (sharing the same entries) push the last round's records onto the device.
        long churnedUntil = store.TailAddress;
        for (long filler = 1_000_000; store.HeadAddress < churnedUntil; filler++)
        {
            session.Upsert(filler, filler);
        }

        CompactionResult result = await store.CompactAsync(store.HeadAddress);

        Assert.True(result.RecordsCopied > 0, "some live records were on the device");
        Assert.True(result.RecordsCopied < result.RecordsExamined, "some records were superseded");
        Churn.AssertMatches(session, keys, model);
    }
}
