using Azure.Storage.Blobs.Specialized;
using HybridKV.Azure.Tests.Support;
using HybridKV.Checkpoints;
using HybridKV.Devices;

namespace HybridKV.Azure.Tests.Leases;

/// <summary>The blob lease: a second writer is refused, and a writer whose blobs were taken over stops writing.</summary>
[Trait("Category", "Azure")]
public sealed class OneWriterTests
{
    [Fact]
    public async Task A_second_device_or_checkpoint_store_on_the_same_blobs_is_refused_naming_the_container()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        AzurePageBlobDevice first = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions());
        await first.WriteAsync(0, Pattern(4096, 1));

        var refused = await Assert.ThrowsAsync<BlobStoreInUseException>(() => AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions()));
        Assert.Contains($"{azurite.BlobEndpoint}/{container}", refused.Message, StringComparison.Ordinal);
        Assert.Contains("'hlog.lock'", refused.Message, StringComparison.Ordinal);
        Assert.Contains($"process {Environment.ProcessId}", refused.Holder, StringComparison.Ordinal);

        AzureCheckpointStore checkpoints = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
        var refusedStore = await Assert.ThrowsAsync<BlobStoreInUseException>(() => AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions()));
        Assert.Equal("checkpoints.lock", refusedStore.LeaseBlob);

        // Disposing releases the leases: the next writer gets them at once and sees the first one's data.
        await first.DisposeAsync();
        await checkpoints.DisposeAsync();
        await using AzurePageBlobDevice second = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions());
        byte[] read = new byte[4096];
        await second.ReadAsync(0, read);
        Assert.Equal(Pattern(4096, 1), read);
        await using AzureCheckpointStore secondStore = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
    }

    /// <summary>
    /// The first writer's lease is broken (as when it expires behind a network partition) and a second writer opens:
    /// the service refuses the first one's writes from then on (each segment blob carries the second's lease id), so
    /// it cannot overwrite what the second one writes; it reports the lost lease and refuses to flush or checkpoint.
    /// </summary>
    [Fact]
    public async Task A_writer_whose_blobs_another_writer_took_over_stops_writing_and_loses_nothing_of_the_new_writer()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        await using AzurePageBlobDevice stale = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions());
        await using AzureCheckpointStore staleCheckpoints = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
        await stale.WriteAsync(0, Pattern(8192, 1));

        await azurite.Container(container).GetBlobClient("hlog.lock").GetBlobLeaseClient().BreakAsync(TimeSpan.Zero);
        await azurite.Container(container).GetBlobClient("checkpoints.lock").GetBlobLeaseClient().BreakAsync(TimeSpan.Zero);
        await using AzurePageBlobDevice current = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions());
        await using AzureCheckpointStore currentCheckpoints = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
        await current.WriteAsync(4096, Pattern(4096, 2));

        var refused = await Assert.ThrowsAsync<StorageDeviceException>(
            async () => await stale.WriteAsync(4096, Pattern(4096, 3)));
        Assert.IsType<BlobLeaseLostException>(refused.InnerException);
        Assert.Contains("lost its lease", refused.Message, StringComparison.Ordinal);
        Assert.True(stale.LeaseLost);
        await Assert.ThrowsAsync<StorageDeviceException>(async () => await stale.FlushAsync());
        await Assert.ThrowsAsync<StorageDeviceException>(async () => await stale.WriteAsync(1L << 20, Pattern(512, 4)));

        // The stale checkpoint store finds out when it renews before committing a manifest.
        var catalog = new CheckpointCatalog(staleCheckpoints);
        CheckpointWriter writer = catalog.Begin();
        await writer.WritePartAsync("data", (stream, token) => stream.WriteAsync(Pattern(1000, 5), token).AsTask());
        await Assert.ThrowsAsync<BlobLeaseLostException>(() => writer.CommitAsync(System.Text.Json.JsonDocument.Parse("{}").RootElement));
        Assert.Empty(await currentCheckpoints.ListCommittedAsync(CancellationToken.None));

        byte[] read = new byte[8192];
        await current.ReadAsync(0, read);
        Assert.Equal(Pattern(4096, 1), read[..4096]);
        Assert.Equal(Pattern(4096, 2), read[4096..]);
        await current.FlushAsync();
        Assert.False(current.LeaseLost);
    }

    internal static byte[] Pattern(int length, byte seed)
    {
        byte[] data = new byte[length];
        for (int i = 0; i < length; i++)
        {
            data[i] = (byte)(seed * 37 + i * 13 + (i >> 9));
        }

        return data;
    }
}
