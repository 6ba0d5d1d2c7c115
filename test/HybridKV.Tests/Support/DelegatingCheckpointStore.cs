using HybridKV.Checkpoints;

namespace HybridKV.Tests.Support;

/// <summary>A checkpoint store that passes every call to another; tests override the calls they interfere with.</summary>
public abstract class DelegatingCheckpointStore(CheckpointStore inner, bool ownsInner = false) : CheckpointStore
{
    protected CheckpointStore Inner => inner;

    public override Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken) =>
        inner.CreatePartAsync(token, part, cancellationToken);

    public override Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken) =>
        inner.OpenPartAsync(token, part, cancellationToken);

    public override Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken) =>
        inner.CommitAsync(token, manifest, cancellationToken);

    public override Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken) =>
        inner.ListCommittedAsync(cancellationToken);

    public override Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken) =>
        inner.ListAllAsync(cancellationToken);

    public override Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken) =>
        inner.ReadManifestAsync(token, cancellationToken);

    public override Task DeleteAsync(Guid token, CancellationToken cancellationToken) =>
        inner.DeleteAsync(token, cancellationToken);

    public override string Describe(Guid token, string? part) => inner.Describe(token, part);

    protected override void Dispose(bool disposing)
    {
        if (disposing && ownsInner)
        {
            inner.Dispose();
        }

        base.Dispose(disposing);
    }
}
