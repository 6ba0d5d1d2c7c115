namespace HybridKV.Checkpoints;

/// <summary>
/// Where checkpoints live (a local directory; later an Azure blob container): named parts grouped by checkpoint token,
/// plus one manifest per checkpoint. The store only moves bytes durably; <see cref="CheckpointCatalog"/> decides what
/// a complete checkpoint is.
/// </summary>
/// <remarks>
/// Contract: a part is durable once the stream from <see cref="CreatePartAsync"/> is disposed; a manifest written with
/// <see cref="CommitAsync"/> appears atomically and durably, entirely or not at all, and only checkpoints with a
/// manifest are listed by <see cref="ListCommittedAsync"/>.
/// </remarks>
public abstract class CheckpointStore : IDisposable
{
    /// <summary>Opens a new, empty part of an uncommitted checkpoint for writing. Disposing the stream makes it durable.</summary>
    public abstract Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken);

    /// <summary>Opens a part for reading.</summary>
    /// <exception cref="FileNotFoundException">The part does not exist.</exception>
    public abstract Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken);

    /// <summary>Writes the manifest of <paramref name="token"/> atomically and durably: this makes it committed.</summary>
    public abstract Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken);

    /// <summary>The tokens of every checkpoint that has a manifest.</summary>
    public abstract Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken);

    /// <summary>The tokens of every checkpoint, committed or not (for cleaning up after interrupted writes).</summary>
    public abstract Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken);

    /// <summary>Reads a checkpoint's manifest.</summary>
    /// <exception cref="FileNotFoundException">The checkpoint has no manifest.</exception>
    public abstract Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken);

    /// <summary>Deletes a checkpoint: its manifest first (so it stops being committed), then its parts.</summary>
    public abstract Task DeleteAsync(Guid token, CancellationToken cancellationToken);

    /// <summary>Where a part lives, for error messages (a path or a URI without credentials).</summary>
    public abstract string Describe(Guid token, string? part);

    /// <summary>Releases resources.</summary>
    public void Dispose()
    {
        Dispose(disposing: true);
        GC.SuppressFinalize(this);
    }

    /// <summary>Releases resources.</summary>
    protected virtual void Dispose(bool disposing)
    {
    }
}
