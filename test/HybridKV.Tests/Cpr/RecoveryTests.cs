using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

[Trait("Category", "Checkpoint")]
public sealed class RecoveryTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    public static TheoryData<CheckpointKind, CheckpointMode> EveryKindAndMode => new()
    {
        { CheckpointKind.Full, CheckpointMode.FoldOver },
        { CheckpointKind.Full, CheckpointMode.Snapshot },
        { CheckpointKind.LogOnly, CheckpointMode.FoldOver },
        { CheckpointKind.LogOnly, CheckpointMode.Snapshot },
    };

    [Theory]
    [MemberData(nameof(EveryKindAndMode))]
    public async Task Recovery_restores_exactly_what_the_checkpoint_committed(CheckpointKind kind, CheckpointMode mode)
    {
        string directory = _directory.NewSubdirectory();
        var id = Guid.NewGuid();
        const long Keys = 3000;
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(directory)))
        using (var session = store.NewSession(id))
        {
            session.Preload(Keys, factor: 10);
            for (long k = 0; k < Keys; k += 3)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1));
            }

            Assert.Equal(Status.Ok, session.DeleteNow(7));
            long committedUntil = session.LastSerialNo;
            await store.TakeCheckpointAsync(kind, mode);
            Assert.Equal(new CommitPoint(committedUntil, []), session.DurableCommitPoint);

            // After the checkpoint: none of this may survive.
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal(Status.Ok, session.RMWNow(k, 1_000_000));
            }

            session.Upsert(Keys + 5, 99);
        }

        using var recovered = StoreOnDevice.Create(StoreOnDevice.Settings(directory));
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(kind, result.Kind);
        Assert.Equal(mode, result.Mode);
        using var continued = recovered.ContinueSession(id, out CommitPoint point);
        Assert.Equal(Keys + (Keys / 3) + 1 + 1, point.UntilSerialNo + 1);
        Assert.Empty(point.ExcludedSerialNos);
        Assert.Equal(point.UntilSerialNo + 1, continued.NextSerialNo);
        for (long k = 0; k < Keys; k++)
        {
            (Status status, long value) = continued.ReadNow(k);
            if (k == 7)
            {
                Assert.Equal(Status.NotFound, status);
                continue;
            }

            Assert.Equal(Status.Ok, status);
            Assert.Equal((k * 10) + (k % 3 == 0 ? 1 : 0), value);
        }

        Assert.Equal(Status.NotFound, continued.ReadNow(Keys + 5).Status);

        // The recovered store keeps working and checkpoints again.
        Assert.Equal(Status.Ok, continued.RMWNow(1, 5));
        await recovered.TakeCheckpointAsync(CheckpointKind.LogOnly, mode);
        Assert.Equal(15, continued.ReadNow(1).Value);
    }

    [Fact]
    public async Task A_store_without_checkpoints_recovers_nothing_and_stays_empty()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        Assert.Null(await store.RecoverAsync());
        using var session = store.NewSession();
        Assert.Equal(Status.NotFound, session.ReadNow(1).Status);
    }
}
