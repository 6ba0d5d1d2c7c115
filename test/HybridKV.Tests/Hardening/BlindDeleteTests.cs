using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// Deleting a key that lives only on the device appends a tombstone without reading the device (issue 16, item 11):
/// a delete is blind like an upsert, so it never waits for storage and works while the device cannot be read.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class BlindDeleteTests
{
    [Fact]
    public async Task Deleting_keys_that_live_only_on_the_device_reads_nothing_and_the_deletes_survive_recovery()
    {
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 20));
        using var checkpoints = new MemoryCheckpointStore();
        StoreSettings settings = StoreOnDevice.Settings(device: device) with { CheckpointStore = checkpoints };
        using (device)
        {
            using (var store = StoreOnDevice.Create(settings))
            using (var session = store.NewSession())
            {
                session.Preload(factor: 2);
                Assert.True(store.HeadAddress > store.BeginAddress, "nothing was evicted");

                // Any read would fail: each delete completes in the call, without going pending.
                long readsBefore = device.ReadCount;
                device.FailRead = _ => true;
                for (long key = 0; key < 100; key++)
                {
                    Assert.Equal(Status.Ok, session.Delete(key));
                }

                Assert.Equal(readsBefore, device.ReadCount);
                device.FailRead = null;
                for (long key = 0; key < 100; key++)
                {
                    Assert.Equal(Status.NotFound, session.ReadNow(key).Status);
                }

                // A second delete finds the tombstone in memory.
                Assert.Equal(Status.NotFound, session.Delete(5));
                Assert.Equal((Status.Ok, 200L), session.ReadNow(100));
                await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            }

            using (var recovered = StoreOnDevice.Create(settings))
            {
                await recovered.RecoverAsync();
                using var reader = recovered.NewSession();
                for (long key = 0; key < 100; key++)
                {
                    Assert.Equal(Status.NotFound, reader.ReadNow(key).Status);
                }

                Assert.Equal((Status.Ok, 200L), reader.ReadNow(100));
            }
        }
    }
}
