using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>
/// A snapshot holds back in-place updates only while it copies the log (CPR App. D): once copied, updates go on in
/// place while the copy becomes durable, and the checkpoint still holds the values of its version.
/// </summary>
[Trait("Category", "Checkpoint")]
public sealed class SnapshotDurabilityTests
{
    [Fact]
    public async Task Updates_go_on_in_place_while_a_copied_snapshot_becomes_durable_and_the_checkpoint_keeps_its_version()
    {
        using var device = new MemoryDevice(512, 1L << 16);
        var release = new TaskCompletionSource();
        var checkpoints = new GatedCheckpointStore(new MemoryCheckpointStore()) { HoldSnapshotDurability = release.Task };
        StoreSettings settings = StoreOnDevice.Settings(device: device) with { CheckpointStore = checkpoints };
        var id = Guid.NewGuid();
        Task<Guid> checkpoint;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession(id))
        {
            // Few enough records to stay in the mutable region, where updates at rest are in place.
            session.Preload(100, factor: 10);
            checkpoint = store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
            try
            {
                await checkpoints.SnapshotDurabilityReached.WaitAsync(TimeSpan.FromMinutes(1));
                long tail = store.TailAddress;
                for (long k = 0; k < 100; k++)
                {
                    Assert.Equal(Status.Ok, session.RMWNow(k, 1));
                }

                Assert.Equal(tail, store.TailAddress);
                Assert.False(checkpoint.IsCompleted);
            }
            finally
            {
                // Disposing the store waits for the checkpoint.
                release.TrySetResult();
            }

            await checkpoint;
            Assert.Equal((Status.Ok, 11L), session.ReadNow(1));
        }

        using var recovered = StoreOnDevice.Create(settings);
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(CheckpointMode.Snapshot, result.Mode);
        using var continued = recovered.ContinueSession(id, out CommitPoint point);
        Assert.Equal(100, point.UntilSerialNo);
        for (long k = 0; k < 100; k++)
        {
            Assert.Equal((Status.Ok, k * 10), continued.ReadNow(k));
        }
    }
}
