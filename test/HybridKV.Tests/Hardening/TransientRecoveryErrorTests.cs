using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// A checkpoint that cannot be read for a moment is not a damaged one (issue 16, item 11): recovery stops without
/// deleting it, and recovers it once the storage reads again.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class TransientRecoveryErrorTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Theory]
    [InlineData("manifest")]
    [InlineData("part")]
    public async Task A_transient_read_error_stops_recovery_and_deletes_no_checkpoint(string failing)
    {
        string directory = _directory.NewSubdirectory();
        using var checkpoints = new FlakyCheckpointStore(new LocalCheckpointStore(Path.Combine(directory, "checkpoints")));
        StoreSettings settings = StoreOnDevice.Settings(directory) with { CheckpointStore = checkpoints };
        Guid newest;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession())
        {
            session.Upsert(1, 10);
            await store.TakeCheckpointAsync();
            session.Upsert(1, 20);
            newest = await store.TakeCheckpointAsync();
        }

        checkpoints.Failing = newest;
        checkpoints.FailManifest = failing == "manifest";
        using (var first = StoreOnDevice.Create(settings))
        {
            var error = await Assert.ThrowsAsync<IOException>(() => first.RecoverAsync());
            Assert.Contains("cannot be read", error.Message, StringComparison.Ordinal);
        }

        Assert.Contains(newest, await checkpoints.ListCommittedAsync(CancellationToken.None));
        checkpoints.Failing = null;
        using var second = StoreOnDevice.Create(settings);
        RecoveryResult? result = await second.RecoverAsync();
        Assert.Equal(newest, result!.Token);
        using var session2 = second.NewSession();
        Assert.Equal((Status.Ok, 20L), session2.ReadNow(1));
    }

    /// <summary>Fails reads of one checkpoint with an I/O error, as a storage that is briefly unavailable would.</summary>
    private sealed class FlakyCheckpointStore(CheckpointStore inner) : DelegatingCheckpointStore(inner, ownsInner: true)
    {
        public Guid? Failing { get; set; }

        public bool FailManifest { get; set; }

        public override Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken) =>
            token == Failing && !FailManifest
                ? Task.FromException<Stream>(new IOException("Input/output error (injected)"))
                : Inner.OpenPartAsync(token, part, cancellationToken);

        public override Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken) =>
            token == Failing && FailManifest
                ? Task.FromException<byte[]>(new IOException("Input/output error (injected)"))
                : Inner.ReadManifestAsync(token, cancellationToken);
    }
}
