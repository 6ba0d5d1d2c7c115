using System.Text.Json;
using HybridKV.Checkpoints;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Checkpoints;

[Trait("Category", "Checkpoint")]
public sealed class CheckpointCatalogTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private static JsonElement Metadata(int version) =>
        JsonSerializer.SerializeToElement(new { version, note = "test" });

    private static async Task<CheckpointManifest> WriteCheckpointAsync(CheckpointCatalog catalog, int version)
    {
        CheckpointWriter writer = catalog.Begin();
        await writer.WritePartAsync("index", async (stream, ct) =>
            await stream.WriteAsync(Enumerable.Range(0, 100_000).Select(i => (byte)(i * version)).ToArray(), ct));
        await writer.WritePartAsync("log", async (stream, ct) =>
            await stream.WriteAsync(new byte[] { 1, 2, 3, (byte)version }, ct));
        return await writer.CommitAsync(Metadata(version));
    }

    [Fact]
    public async Task A_checkpoint_is_invisible_until_committed_and_then_carries_its_metadata_and_parts()
    {
        using var store = new LocalCheckpointStore(_directory.NewSubdirectory());
        var catalog = new CheckpointCatalog(store);
        Assert.Null((await catalog.FindLatestCompleteAsync()).Manifest);

        CheckpointWriter writer = catalog.Begin();
        await writer.WritePartAsync("index", (stream, ct) => stream.WriteAsync(new byte[] { 9, 9 }, ct).AsTask());
        Assert.Empty(await store.ListCommittedAsync(CancellationToken.None));
        Assert.Null((await catalog.FindLatestCompleteAsync()).Manifest);

        CheckpointManifest committed = await writer.CommitAsync(Metadata(7));
        CheckpointSelection selection = await catalog.FindLatestCompleteAsync();
        Assert.NotNull(selection.Manifest);
        Assert.Equal(committed.Token, selection.Manifest.Token);
        Assert.Equal(7, selection.Manifest.Metadata.GetProperty("version").GetInt32());
        Assert.Equal(new CheckpointPart("index", 2, Crc32C.Compute([9, 9])), Assert.Single(selection.Manifest.Parts));
        await using Stream part = await catalog.OpenPartAsync(selection.Manifest, "index");
        Assert.Equal(9, part.ReadByte());
        await Assert.ThrowsAsync<InvalidOperationException>(() => writer.CommitAsync(Metadata(8)));
    }

    [Fact]
    public async Task The_newest_complete_checkpoint_is_chosen()
    {
        using var store = new LocalCheckpointStore(_directory.NewSubdirectory());
        var catalog = new CheckpointCatalog(store);
        for (int version = 1; version <= 3; version++)
        {
            await WriteCheckpointAsync(catalog, version);
        }

        CheckpointSelection selection = await catalog.FindLatestCompleteAsync();
        Assert.Equal(3, selection.Manifest!.Metadata.GetProperty("version").GetInt32());
        Assert.Equal(3, selection.Manifest.Sequence);
        Assert.Empty(selection.Skipped);
    }

    public static TheoryData<string, string> Damages => new()
    {
        { "index", "flip" }, { "index", "truncate" }, { "log", "flip" }, { "log", "truncate" }, { "log", "delete" },
        { "manifest.json", "flip" }, { "manifest.json", "truncate" },
    };

    /// <summary>Each file of the newest checkpoint, damaged in turn: recovery falls back to the one before.</summary>
    [Theory]
    [MemberData(nameof(Damages))]
    public async Task A_damaged_file_makes_recovery_fall_back_to_the_previous_checkpoint(string file, string damage)
    {
        using var store = new LocalCheckpointStore(_directory.NewSubdirectory());
        var catalog = new CheckpointCatalog(store);
        await WriteCheckpointAsync(catalog, 1);
        CheckpointManifest newest = await WriteCheckpointAsync(catalog, 2);
        string path = store.Describe(newest.Token, file);
        Damage(path, damage);

        CheckpointSelection selection = await catalog.FindLatestCompleteAsync();
        Assert.Equal(1, selection.Manifest!.Metadata.GetProperty("version").GetInt32());
        Assert.Contains(selection.Skipped, problem => problem.Contains(path, StringComparison.Ordinal));
    }

    [Fact]
    public async Task When_no_checkpoint_verifies_the_error_names_every_bad_file()
    {
        using var store = new LocalCheckpointStore(_directory.NewSubdirectory());
        var catalog = new CheckpointCatalog(store);
        CheckpointManifest first = await WriteCheckpointAsync(catalog, 1);
        CheckpointManifest second = await WriteCheckpointAsync(catalog, 2);
        Damage(store.Describe(first.Token, "index"), "flip");
        Damage(store.Describe(second.Token, "log"), "truncate");

        var error = await Assert.ThrowsAsync<CorruptCheckpointException>(() => catalog.FindLatestCompleteAsync());
        Assert.Equal(2, error.Problems.Count);
        Assert.Contains(store.Describe(first.Token, "index"), error.Message, StringComparison.Ordinal);
        Assert.Contains(store.Describe(second.Token, "log"), error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Retention_keeps_the_newest_checkpoints_and_removes_older_and_interrupted_ones()
    {
        using var store = new LocalCheckpointStore(_directory.NewSubdirectory());
        var catalog = new CheckpointCatalog(store);
        for (int version = 1; version <= 4; version++)
        {
            await WriteCheckpointAsync(catalog, version);
        }

        CheckpointWriter interrupted = catalog.Begin();
        await interrupted.WritePartAsync("index", (stream, ct) => stream.WriteAsync(new byte[10], ct).AsTask());

        IReadOnlyList<Guid> deleted = await catalog.ApplyRetentionAsync(keep: 2, deleteUncommitted: false);
        Assert.Equal(2, deleted.Count);
        Assert.Equal(3, (await store.ListAllAsync(CancellationToken.None)).Count);
        Assert.Equal(new long[] { 4, 3 }, (await catalog.ListAsync()).Select(m => m.Sequence));

        deleted = await catalog.ApplyRetentionAsync(keep: 2, deleteUncommitted: true);
        Assert.Equal(interrupted.Token, Assert.Single(deleted));
        Assert.Equal(2, (await store.ListAllAsync(CancellationToken.None)).Count);
        Assert.Equal(4, (await catalog.FindLatestCompleteAsync()).Manifest!.Metadata.GetProperty("version").GetInt32());
    }

    [Fact]
    public void Crc32C_matches_the_standard_check_value()
    {
        // The CRC-32C of the ASCII digits 1 to 9 is 0xE3069283 (RFC 3720, appendix B.4).
        Assert.Equal(0xE3069283u, Crc32C.Compute("123456789"u8));
        Assert.Equal(Crc32C.Compute("123456789"u8), Crc32C.Append(Crc32C.Compute("1234"u8), "56789"u8));
    }

    private static void Damage(string path, string damage)
    {
        switch (damage)
        {
            case "flip":
                byte[] bytes = File.ReadAllBytes(path);
                bytes[bytes.Length / 2] ^= 0x20;
                File.WriteAllBytes(path, bytes);
                break;
            case "truncate":
                using (var stream = new FileStream(path, FileMode.Open))
                {
                    stream.SetLength(stream.Length / 2);
                }

                break;
            default:
                File.Delete(path);
                break;
        }
    }
}
