using Azure.Storage.Blobs.Models;
using CountStore;
using HybridKV.Azure.Tests.Support;
using HybridKV.Checkpoints;

namespace HybridKV.Azure.Tests.Store;

/// <summary>A count store whose log is on page blobs and whose checkpoints are in a blob container, in Azurite.</summary>
[Trait("Category", "Azure")]
public sealed class StoreOnAzureTests
{
    private const int Keys = 20_000;

    /// <summary>
    /// 20,000 records (about 15 times the 32 KiB of memory) go to page blobs as pages are evicted; reads of keys long
    /// evicted are served from Azure, and RMWs on them copy the old value forward.
    /// </summary>
    [Fact]
    public async Task A_store_larger_than_memory_reads_and_updates_keys_evicted_to_page_blobs()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        await using AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions(segmentSize: 1L << 16));
        using var store = new Counts.Store(AzureStores.Settings(device, checkpoints: null));
        using var session = store.NewSession();
        for (long key = 0; key < Keys; key++)
        {
            await session.UpsertAsync(key, key * 7);
        }

        Assert.True(store.HeadAddress > 10L << 15, $"head {store.HeadAddress}: too little was evicted");
        Assert.True(device.BytesWritten >= 10L << 15, $"only {device.BytesWritten} bytes went to Azure");
        Assert.True(CountSegmentBlobs(azurite, container) >= 4, "the log should span several segment blobs");

        var random = new Random(21);
        for (int i = 0; i < 500; i++)
        {
            long key = random.Next(Keys / 2);
            ReadResult<long> read = await session.ReadAsync(key);
            Assert.Equal(Status.Ok, read.Status);
            Assert.Equal(key * 7, read.Output);
        }

        for (long key = 0; key < 200; key++)
        {
            await session.RMWAsync(key, 1);
        }

        for (long key = 0; key < 200; key++)
        {
            ReadResult<long> read = await session.ReadAsync(key);
            Assert.Equal((key * 7) + 1, read.Output);
        }

        Assert.True(device.BytesRead > 0, "no read was served by Azure");
    }

    /// <summary>
    /// A checkpoint taken on Azure, then more updates that no checkpoint covers, then everything disposed (leases
    /// released): a new device, checkpoint store and store recover exactly the checkpoint's state.
    /// </summary>
    [Theory]
    [InlineData(CheckpointMode.FoldOver)]
    [InlineData(CheckpointMode.Snapshot)]
    public async Task A_checkpoint_on_Azure_is_recovered_by_a_new_store_with_exactly_its_state(CheckpointMode mode)
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        const int Written = 1_200;
        Guid token;
        await using (AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(
                         azurite.ConnectionString, container, AzureStores.DeviceOptions()))
        await using (AzureCheckpointStore checkpoints = await AzureCheckpointStore.OpenAsync(
                         azurite.ConnectionString, container, AzureStores.CheckpointOptions()))
        {
            using var store = new Counts.Store(AzureStores.Settings(device, checkpoints));
            using (var session = store.NewSession())
            {
                for (long key = 0; key < Written; key++)
                {
                    await session.RMWAsync(key, key + 1);
                }

                token = await store.TakeCheckpointAsync(CheckpointKind.Full, mode);
                for (long key = 0; key < Written; key++)
                {
                    // After the checkpoint: lost with the process.
                    await session.RMWAsync(key, 1_000_000);
                }
            }
        }

        await using AzurePageBlobDevice reopened = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions());
        await using AzureCheckpointStore reopenedCheckpoints = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
        using var recovered = new Counts.Store(AzureStores.Settings(reopened, reopenedCheckpoints));
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        Assert.Equal(token, result.Token);
        using var reader = recovered.NewSession();
        for (long key = 0; key < Written; key++)
        {
            ReadResult<long> read = await reader.ReadAsync(key);
            Assert.Equal(Status.Ok, read.Status);
            Assert.Equal(key + 1, read.Output);
        }
    }

    private static int CountSegmentBlobs(Azurite azurite, string container) =>
        azurite.Container(container).GetBlobs(BlobTraits.None, BlobStates.None, "hlog.", CancellationToken.None).Count(b => long.TryParse(b.Name["hlog.".Length..], out _));
}
