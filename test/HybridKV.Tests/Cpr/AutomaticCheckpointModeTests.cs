using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>
/// <see cref="CheckpointMode.Auto"/>: a fold-over while operations find their records in memory, a snapshot once they
/// read the device, decided anew for each checkpoint; each recovers as the mode it chose.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class AutomaticCheckpointModeTests : IDisposable
{
    private const int CheckpointStarted = 100;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_store_whose_operations_stay_in_memory_folds_over()
    {
        string directory = _directory.NewSubdirectory();
        var id = Guid.NewGuid();
        // Memory for all of it: nothing is read back from the device.
        StoreSettings settings = StoreOnDevice.Settings(directory) with { MemorySizeBytes = 1L << 22 };
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession(id))
        {
            session.Preload(2000, factor: 10);
            for (long k = 0; k < 2000; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1));
                Assert.Equal((k * 10) + 1, session.ReadNow(k).Value);
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Auto);
        }

        using var recovered = StoreOnDevice.Create(settings);
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(CheckpointMode.FoldOver, result.Mode);
        using var continued = recovered.ContinueSession(id, out _);
        for (long k = 0; k < 2000; k++)
        {
            Assert.Equal((Status.Ok, (k * 10) + 1), continued.ReadNow(k));
        }
    }

    [Fact]
    public async Task Reads_from_the_device_make_the_next_checkpoint_a_snapshot_and_only_the_next()
    {
        string directory = _directory.NewSubdirectory();
        var id = Guid.NewGuid();
        var logs = new CollectingLoggerFactory();
        StoreSettings settings = StoreOnDevice.Settings(directory) with { LoggerFactory = logs };
        const long Keys = 20_000;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession(id))
        {
            // Blind upserts of 5x memory: written to the device, never read back.
            session.Preload(Keys, factor: 10);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Auto);

            // The oldest keys are on the device only: reading and updating them reads it.
            for (long k = 0; k < 2000; k++)
            {
                Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
                Assert.Equal(Status.Ok, session.RMWNow(k, 1));
            }

            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Auto);

            // Nothing read since: the next one folds over again.
            session.Upsert(Keys + 1, 7);
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.Auto);

            string[] started = logs.Entries.Where(e => e.EventId == CheckpointStarted).Select(e => e.Message).ToArray();
            Assert.Equal(3, started.Length);
            Assert.EndsWith("(Full, FoldOver)", started[0], StringComparison.Ordinal);
            Assert.EndsWith("(LogOnly, Snapshot)", started[1], StringComparison.Ordinal);
            Assert.EndsWith("(LogOnly, FoldOver)", started[2], StringComparison.Ordinal);
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(CheckpointMode.FoldOver, result.Mode);
        using var continued = recovered.ContinueSession(id, out _);
        for (long k = 0; k < Keys; k += 7)
        {
            Assert.Equal((Status.Ok, (k * 10) + (k < 2000 ? 1 : 0)), continued.ReadNow(k));
        }

        Assert.Equal((Status.Ok, 7L), continued.ReadNow(Keys + 1));
    }

    [Fact]
    public async Task A_snapshot_chosen_automatically_recovers_what_it_committed_and_nothing_after()
    {
        string directory = _directory.NewSubdirectory();
        var id = Guid.NewGuid();
        const long Keys = 20_000;
        long committedUntil;
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        using (var session = store.NewSession(id))
        {
            session.Preload(Keys, factor: 10);
            for (long k = 0; k < Keys; k += 2)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1));
            }

            committedUntil = session.LastSerialNo;
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Auto);
            Assert.Equal(new CommitPoint(committedUntil, []), session.DurableCommitPoint);

            // Updated in place in the mutable region after the snapshot: not in it.
            for (long k = Keys - 200; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1_000_000));
            }
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(CheckpointMode.Snapshot, result.Mode);
        using var continued = recovered.ContinueSession(id, out CommitPoint point);
        Assert.Equal(committedUntil, point.UntilSerialNo);
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, (k * 10) + (k % 2 == 0 ? 1 : 0)), continued.ReadNow(k));
        }
    }
}
