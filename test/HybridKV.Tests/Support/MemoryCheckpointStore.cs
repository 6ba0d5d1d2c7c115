using System.Collections.Concurrent;
using HybridKV.Checkpoints;

namespace HybridKV.Tests.Support;

/// <summary>Checkpoints in memory, for tests that take tens of thousands of them.</summary>
public sealed class MemoryCheckpointStore : CheckpointStore
{
    private readonly ConcurrentDictionary<(Guid Token, string Part), byte[]> _parts = new();
    private readonly ConcurrentDictionary<Guid, byte[]> _manifests = new();
    private readonly ConcurrentDictionary<Guid, bool> _tokens = new();

    public override Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        _tokens[token] = true;
        return Task.FromResult<Stream>(new PartStream(bytes => _parts[(token, part)] = bytes));
    }

    public override Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken) =>
        _parts.TryGetValue((token, part), out byte[]? bytes)
            ? Task.FromResult<Stream>(new MemoryStream(bytes, writable: false))
            : Task.FromException<Stream>(new FileNotFoundException($"No part {Describe(token, part)}."));

    public override Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken)
    {
        _tokens[token] = true;
        _manifests[token] = manifest.ToArray();
        return Task.CompletedTask;
    }

    public override Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken) =>
        Task.FromResult<IReadOnlyList<Guid>>(_manifests.Keys.ToList());

    public override Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken) =>
        Task.FromResult<IReadOnlyList<Guid>>(_tokens.Keys.ToList());

    public override Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken) =>
        _manifests.TryGetValue(token, out byte[]? manifest)
            ? Task.FromResult(manifest)
            : Task.FromException<byte[]>(new FileNotFoundException($"No manifest {Describe(token, null)}."));

    public override Task DeleteAsync(Guid token, CancellationToken cancellationToken)
    {
        _manifests.TryRemove(token, out _);
        foreach ((Guid Token, string Part) key in _parts.Keys.Where(k => k.Token == token))
        {
            _parts.TryRemove(key, out _);
        }

        _tokens.TryRemove(token, out _);
        return Task.CompletedTask;
    }

    public override string Describe(Guid token, string? part) => $"memory:{token}/{part}";

    /// <summary>A part being written: its bytes are kept when it is disposed.</summary>
    private sealed class PartStream(Action<byte[]> complete) : MemoryStream
    {
        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                complete(ToArray());
            }

            base.Dispose(disposing);
        }
    }
}
