using Azure.Storage.Blobs.Models;
using System.Text.Json;
using HybridKV.Azure.Tests.Leases;
using HybridKV.Azure.Tests.Support;
using HybridKV.Checkpoints;

namespace HybridKV.Azure.Tests.Checkpoints;

[Trait("Category", "Azure")]
public sealed class AzureCheckpointStoreTests
{
    /// <summary>
    /// Three checkpoints: an older complete one, a newer one whose part is then overwritten (torn or corrupt), and one
    /// whose manifest was never written (interrupted). Only manifests count; the damaged one fails its checksum and
    /// recovery takes the older; retention deletes what it should, blobs and all.
    /// </summary>
    [Fact]
    public async Task Only_checkpoints_with_a_manifest_count_and_recovery_falls_back_past_a_damaged_one()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        await using AzureCheckpointStore store = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, container, AzureStores.CheckpointOptions());
        var catalog = new CheckpointCatalog(store);
        Guid older = await WriteAsync(catalog, seed: 1, commit: true);
        Guid damaged = await WriteAsync(catalog, seed: 2, commit: true);
        Guid interrupted = await WriteAsync(catalog, seed: 3, commit: false);

        Assert.Equal(new[] { older, damaged }.Order(), (await store.ListCommittedAsync(CancellationToken.None)).Order());
        Assert.Equal(new[] { older, damaged, interrupted }.Order(), (await store.ListAllAsync(CancellationToken.None)).Order());
        Assert.Equal(damaged, (await catalog.FindLatestCompleteAsync()).Manifest?.Token);

        // Same length, other bytes: only the checksum can tell.
        await azurite.Container(container).GetBlobClient($"checkpoints/{damaged:N}/part")
            .UploadAsync(BinaryData.FromBytes(OneWriterTests.Pattern(70_000, 99)), overwrite: true);
        CheckpointSelection selection = await new CheckpointCatalog(store).FindLatestCompleteAsync();
        Assert.Equal(older, selection.Manifest?.Token);
        string skipped = Assert.Single(selection.Skipped);
        Assert.Contains($"{azurite.BlobEndpoint}/{container}/checkpoints/{damaged:N}/part", skipped, StringComparison.Ordinal);
        Assert.Contains("checksum", skipped, StringComparison.Ordinal);

        await using (Stream part = await catalog.OpenPartAsync(selection.Manifest!, "part"))
        {
            using var copy = new MemoryStream();
            await part.CopyToAsync(copy);
            Assert.Equal(OneWriterTests.Pattern(70_000, 1), copy.ToArray());
        }

        IReadOnlyList<Guid> deleted = await catalog.ApplyRetentionAsync(keep: 1, deleteUncommitted: true);
        Assert.Equal(new[] { older, interrupted }.Order(), deleted.Order());
        Assert.Equal([damaged], await store.ListAllAsync(CancellationToken.None));
        Assert.DoesNotContain(azurite.Container(container).GetBlobs(BlobTraits.None, BlobStates.None, $"checkpoints/{older:N}/", CancellationToken.None), _ => true);
        await Assert.ThrowsAsync<FileNotFoundException>(() => store.ReadManifestAsync(older, CancellationToken.None));
        await Assert.ThrowsAsync<FileNotFoundException>(async () =>
        {
            await using Stream part = await store.OpenPartAsync(older, "part", CancellationToken.None);
            await part.ReadExactlyAsync(new byte[10]);
        });
    }

    private static async Task<Guid> WriteAsync(CheckpointCatalog catalog, byte seed, bool commit)
    {
        CheckpointWriter writer = catalog.Begin();
        await writer.WritePartAsync("part", (stream, token) => stream.WriteAsync(OneWriterTests.Pattern(70_000, seed), token).AsTask());
        await writer.WritePartAsync("small", (stream, token) => stream.WriteAsync(new byte[] { seed }, token).AsTask());
        if (commit)
        {
            await writer.CommitAsync(JsonDocument.Parse($$"""{"seed":{{seed}}}""").RootElement);
        }

        return writer.Token;
    }
}
