using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Microsoft.Extensions.Logging;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// User callbacks that throw (issue 16, items 3 and 4): the record a writer was filling is never visible, in memory or
/// after recovery, and a pending operation that fails still leaves the session's CPR bookkeeping, so that later
/// operations become durable and checkpoints complete.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class CallbackFailureTests : IDisposable
{
    private const long Poison = CountFunctions.Poison;
    private static readonly TimeSpan Guard = TimeSpan.FromMinutes(1);

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Theory]
    [InlineData("initial")]
    [InlineData("copy")]
    [InlineData("upsert")]
    public async Task A_record_whose_writer_threw_is_never_visible_not_even_after_recovery(string writer)
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory) with { MutableFraction = 0.25 };
        const long Key = 5;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession())
        {
            // The index comes from this full checkpoint; recovery replays the log written after it.
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver).WaitAsync(Guard);
            if (writer == "copy")
            {
                // Read-only but in memory: the RMW copies it to the tail and calls CopyUpdater on the copy.
                session.Upsert(Key, 40);
                long address = store.TailAddress;
                session.Preload(1_000, first: 100);
                Assert.True(store.ReadOnlyAddress > address, "the record is still mutable");
                Assert.True(store.HeadAddress < address, "the record left memory");
            }

            Assert.Throws<PoisonException>(() => _ = writer == "upsert"
                ? session.Upsert(Key, Poison)
                : session.RMW(Key, Poison));
            Assert.Equal(writer == "copy" ? (Status.Ok, 40L) : (Status.NotFound, 0L), session.ReadNow(Key));
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver).WaitAsync(Guard);
        }

        using (var recovered = StoreOnDevice.Create(settings))
        {
            await recovered.RecoverAsync().WaitAsync(Guard);
            using var session = recovered.NewSession();
            Assert.Equal(writer == "copy" ? (Status.Ok, 40L) : (Status.NotFound, 0L), session.ReadNow(Key));
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task A_pending_RMW_whose_updater_throws_leaves_the_session_able_to_commit(bool strictCpr)
    {
        StoreSettings settings = StoreOnDevice.Settings(_directory.NewSubdirectory()) with { StrictCpr = strictCpr };
        using var store = StoreOnDevice.Create(settings);
        using var session = store.NewSession();
        session.Preload(20_000);

        var poisoned = new CountContext();
        Assert.Equal(Status.Pending, session.RMW(3, Poison, poisoned));
        Assert.Equal(Status.Pending, session.RMW(4, 1, null));
        Assert.Throws<PoisonException>(() => session.CompletePending(wait: true));

        Assert.Equal(0, session.PendingCount);
        Assert.Equal(1, poisoned.Completions);
        Assert.Equal(Status.Error, poisoned.LastStatus);
        Assert.Equal((Status.Ok, 3L), session.ReadNow(3));
        Assert.Equal((Status.Ok, 5L), session.ReadNow(4));

        Assert.Equal(Status.Ok, session.Upsert(6, 60));
        Task committed = session.WaitForCommitAsync(session.LastSerialNo);
        await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver).WaitAsync(Guard);
        await committed.WaitAsync(Guard);
        Assert.Empty(session.DurableCommitPoint.ExcludedSerialNos);
    }

    [Theory]
    [InlineData("upsert")]
    [InlineData("rmw")]
    public async Task An_idle_session_whose_last_operation_threw_sees_it_committed(string writer)
    {
        StoreSettings settings = StoreOnDevice.Settings(_directory.NewSubdirectory());
        using var store = StoreOnDevice.Create(settings);
        using var session = store.NewSession();
        Assert.Equal(Status.Ok, session.Upsert(1, 10));
        Assert.Throws<PoisonException>(() => _ = writer == "upsert" ? session.Upsert(2, Poison) : session.RMW(2, Poison));
        long failed = session.LastSerialNo;

        // The session issues nothing more: the checkpoint crosses it on its behalf, and its point must reach the
        // operation that threw (which changed nothing), or waiting for it would never end.
        Task committed = session.WaitForCommitAsync(failed);
        await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver).WaitAsync(Guard);
        await committed.WaitAsync(Guard);
        Assert.Equal(new CommitPoint(failed, []), session.DurableCommitPoint);
        Assert.Equal(Status.NotFound, session.ReadNow(2).Status);
    }

    [Fact]
    public async Task A_completion_callback_that_throws_still_completes_its_operation_and_the_others()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(20_000);

        var throwing = new CountContext { ThrowOnCompletion = true };
        var others = Enumerable.Range(0, 20).Select(_ => new CountContext()).ToArray();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(1, 0, ref output, throwing));
        for (int i = 0; i < others.Length; i++)
        {
            Assert.Equal(Status.Pending, session.RMW(100 + i, 1, others[i]));
        }

        Assert.Throws<PoisonException>(() => session.CompletePending(wait: true));
        Assert.True(session.CompletePending(wait: true));
        Assert.Equal(0, session.PendingCount);
        Assert.Equal(1, throwing.Completions);
        Assert.All(others, context => Assert.Equal((1, Status.Ok), (context.Completions, context.LastStatus)));

        Task committed = session.WaitForCommitAsync(session.LastSerialNo);
        await store.TakeCheckpointAsync().WaitAsync(Guard);
        await committed.WaitAsync(Guard);
    }

    [Fact]
    public async Task An_awaited_RMW_whose_updater_throws_fails_its_own_task_only()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(20_000);

        Task<Status> poisoned = session.RMWAsync(3, Poison).AsTask();
        Task<Status> fine = session.RMWAsync(4, 1).AsTask();
        await Assert.ThrowsAsync<PoisonException>(() => poisoned.WaitAsync(Guard));
        Assert.Equal(Status.Ok, await fine.WaitAsync(Guard));
        Assert.Equal(new ReadResult<long>(Status.Ok, 3), await session.ReadAsync(3).AsTask().WaitAsync(Guard));
        Assert.Equal(new ReadResult<long>(Status.Ok, 5), await session.ReadAsync(4).AsTask().WaitAsync(Guard));
        Assert.Equal(0, session.PendingCount);
    }

    [Fact]
    public async Task Completion_callbacks_run_for_pending_blocking_operations_only_so_the_owner_of_an_output_is_clear()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(20_000);

        var awaitedRead = new CountContext();
        var awaitedUpdate = new CountContext();
        var blocking = new CountContext();
        Assert.Equal(new ReadResult<long>(Status.Ok, 1), await session.ReadAsync(1, context: awaitedRead).AsTask().WaitAsync(Guard));
        Assert.Equal(Status.Ok, await session.RMWAsync(2, 5, awaitedUpdate).AsTask().WaitAsync(Guard));
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(3, 0, ref output, blocking));
        Assert.True(session.CompletePending(wait: true));

        Assert.Equal(0, awaitedRead.Completions);
        Assert.Equal(0, awaitedUpdate.Completions);
        Assert.Equal((1, Status.Ok, 3L), (blocking.Completions, blocking.LastStatus, blocking.Output));
    }

    [Fact]
    public void Disposing_a_session_whose_pending_operation_fails_does_not_throw_and_logs_the_failure()
    {
        var logs = new CollectingLoggerFactory();
        using var device = new MemoryDevice(512, 1L << 16);
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with { LoggerFactory = logs });
        var session = store.NewSession();
        session.Preload();
        var failing = new CountContext { ThrowOnCompletion = true };
        Assert.Equal(Status.Pending, session.RMW(1, 5, failing));

        session.Dispose();

        Assert.Equal((1, Status.Ok), (failing.Completions, failing.LastStatus));
        (LogLevel level, int eventId, string message, Exception? error) = Assert.Single(logs.Entries, e => e.EventId == 8);
        Assert.Equal(LogLevel.Error, level);
        Assert.Contains(session.Id.ToString(), message, StringComparison.Ordinal);
        Assert.IsType<PoisonException>(error);
        using var reader = store.NewSession();
        Assert.Equal((Status.Ok, 6L), reader.ReadNow(1));
    }

    [Fact]
    public void An_exception_leaving_a_using_block_is_not_replaced_by_a_pending_operation_failing_in_Dispose()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device));
        using (var preload = store.NewSession())
        {
            preload.Preload();
        }

        var thrown = Assert.Throws<TimeoutException>((Action)(() =>
        {
            using var session = store.NewSession();
            Assert.Equal(Status.Pending, session.RMW(2, 5, new CountContext { ThrowOnCompletion = true }));
            throw new TimeoutException("the caller's own failure");
        }));
        Assert.Equal("the caller's own failure", thrown.Message);
    }

    [Fact]
    public void When_several_pending_operations_fail_CompletePending_throws_every_failure_not_only_the_first()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device));
        using var session = store.NewSession();
        session.Preload();

        // A pending upsert has no callback: the exception is the only sign that it did not take effect, so it must not
        // hide behind another operation's.
        var read = new CountContext();
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(3, 0, ref output, read));
        Assert.Equal(Status.Pending, session.Upsert(3, Poison));
        var rmw = new CountContext();
        Assert.Equal(Status.Pending, session.RMW(4, Poison, rmw));

        var thrown = Assert.Throws<AggregateException>(() => session.CompletePending(wait: true));
        Assert.Equal(2, thrown.InnerExceptions.Count);
        Assert.All(thrown.InnerExceptions, e => Assert.IsType<PoisonException>(e));
        Assert.Contains(session.Id.ToString(), thrown.Message, StringComparison.Ordinal);
        Assert.Equal(0, session.PendingCount);
        Assert.Equal((Status.Ok, Status.Error), (read.LastStatus, rmw.LastStatus));
        Assert.Equal((Status.Ok, 3L), session.ReadNow(3));
        Assert.Equal((Status.Ok, 4L), session.ReadNow(4));
    }

    [Fact]
    public async Task RecoverAsync_refuses_a_store_with_an_open_session()
    {
        // A store over existing data refuses sessions until it is recovered, so only a new store can have one open.
        using var fresh = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using (var early = fresh.NewSession())
        {
            var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => fresh.RecoverAsync());
            Assert.Contains("1 session(s)", refused.Message, StringComparison.Ordinal);
        }

        string directory = _directory.NewSubdirectory();
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        using (var session = store.NewSession())
        {
            session.Upsert(1, 1);
            await store.TakeCheckpointAsync().WaitAsync(Guard);
        }

        using var recovering = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        Assert.Throws<InvalidOperationException>(() => recovering.NewSession());
        Assert.NotNull(await recovering.RecoverAsync().WaitAsync(Guard));
        using var late = recovering.NewSession();
        Assert.Equal((Status.Ok, 1L), late.ReadNow(1));
    }
}
