using System.Globalization;
using HybridKV.Devices;
using HybridKV.Utilities;

namespace HybridKV.Checkpoints;

/// <summary>
/// Checkpoints in a local directory: <c>{directory}/{token}/</c> holds the parts, and <c>manifest.json</c>, written to
/// a temporary file, fsynced and renamed, marks the checkpoint committed. Files and the directories that name them are
/// fsynced, so a committed checkpoint survives a power failure.
/// </summary>
public sealed class LocalCheckpointStore : CheckpointStore
{
    private const string ManifestName = "manifest.json";

    private readonly DirectoryLock _lock;

    /// <summary>Uses (and creates if needed) <paramref name="directory"/>, and holds it until disposed: one store writes
    /// a checkpoint directory at a time.</summary>
    /// <exception cref="DirectoryInUseException">Another checkpoint store, in this process or another, holds the
    /// directory.</exception>
    public LocalCheckpointStore(string directory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        DirectoryPath = Path.GetFullPath(directory);
        Directory.CreateDirectory(DirectoryPath);
        _lock = DirectoryLock.Acquire(DirectoryPath);
    }

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _lock.Dispose();
        }

        base.Dispose(disposing);
    }

    /// <summary>Names the store by its directory, for messages.</summary>
    public override string ToString() => $"'{DirectoryPath}'";

    /// <summary>The directory holding one subdirectory per checkpoint.</summary>
    public string DirectoryPath { get; }

    /// <inheritdoc/>
    public override Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        CheckPartName(part);
        string directory = CheckpointDirectory(token);
        bool created = !Directory.Exists(directory);
        Directory.CreateDirectory(directory);
        if (created)
        {
            SyncDirectory(DirectoryPath);
        }

        var stream = new FileStream(Path.Combine(directory, part), FileMode.CreateNew, FileAccess.Write, FileShare.None,
            bufferSize: 1 << 16, FileOptions.Asynchronous);
        return Task.FromResult<Stream>(new DurableFileStream(stream, directory));
    }

    /// <inheritdoc/>
    public override Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        CheckPartName(part);
        return Task.FromResult<Stream>(new FileStream(Path.Combine(CheckpointDirectory(token), part), FileMode.Open,
            FileAccess.Read, FileShare.Read, bufferSize: 1 << 16, FileOptions.Asynchronous | FileOptions.SequentialScan));
    }

    /// <inheritdoc/>
    public override async Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken)
    {
        string directory = CheckpointDirectory(token);
        Directory.CreateDirectory(directory);
        string temporary = Path.Combine(directory, ManifestName + ".tmp");
        await using (var stream = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None,
                         bufferSize: 4096, FileOptions.Asynchronous))
        {
            await stream.WriteAsync(manifest, cancellationToken).ConfigureAwait(false);
            await stream.FlushAsync(cancellationToken).ConfigureAwait(false);
            stream.Flush(flushToDisk: true);
        }

        File.Move(temporary, Path.Combine(directory, ManifestName), overwrite: true);
        SyncDirectory(directory);
    }

    /// <inheritdoc/>
    public override Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken) =>
        Task.FromResult<IReadOnlyList<Guid>>(Tokens().Where(t => File.Exists(ManifestPath(t))).ToList());

    /// <inheritdoc/>
    public override Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken) =>
        Task.FromResult<IReadOnlyList<Guid>>(Tokens().ToList());

    /// <inheritdoc/>
    public override Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken) =>
        File.ReadAllBytesAsync(ManifestPath(token), cancellationToken);

    /// <inheritdoc/>
    public override Task DeleteAsync(Guid token, CancellationToken cancellationToken)
    {
        string directory = CheckpointDirectory(token);
        if (File.Exists(ManifestPath(token)))
        {
            File.Delete(ManifestPath(token));
            SyncDirectory(directory);
        }

        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
            SyncDirectory(DirectoryPath);
        }

        return Task.CompletedTask;
    }

    /// <inheritdoc/>
    public override string Describe(Guid token, string? part) =>
        part is null ? CheckpointDirectory(token) : Path.Combine(CheckpointDirectory(token), part);

    private IEnumerable<Guid> Tokens() => Directory.EnumerateDirectories(DirectoryPath)
        .Select(path => Guid.TryParseExact(Path.GetFileName(path), "N", out Guid token) ? token : Guid.Empty)
        .Where(token => token != Guid.Empty);

    private string CheckpointDirectory(Guid token) =>
        Path.Combine(DirectoryPath, token.ToString("N", CultureInfo.InvariantCulture));

    private string ManifestPath(Guid token) => Path.Combine(CheckpointDirectory(token), ManifestName);

    private static void CheckPartName(string part)
    {
        if (string.IsNullOrWhiteSpace(part) || part.IndexOfAny(Path.GetInvalidFileNameChars()) >= 0 ||
            part.StartsWith(ManifestName, StringComparison.Ordinal))
        {
            throw new ArgumentException($"'{part}' is not a valid checkpoint part name.", nameof(part));
        }
    }

    private static void SyncDirectory(string directory)
    {
        if (OperatingSystem.IsLinux())
        {
            Libc.FSyncDirectory(directory);
        }
    }

    /// <summary>A file stream that, when disposed, fsyncs the file and the directory that names it.</summary>
    private sealed class DurableFileStream(FileStream file, string directory) : WriteThroughStream(file)
    {
        private readonly FileStream _file = file;
        private bool _closed;

        public override void Write(ReadOnlySpan<byte> buffer) => _file.Write(buffer);

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            _file.WriteAsync(buffer, offset, count, cancellationToken);

        public override Task FlushAsync(CancellationToken cancellationToken) => _file.FlushAsync(cancellationToken);

        public override async ValueTask DisposeAsync()
        {
            if (!_closed)
            {
                _closed = true;
                await _file.FlushAsync().ConfigureAwait(false);
                _file.Flush(flushToDisk: true);
                await _file.DisposeAsync().ConfigureAwait(false);
                SyncDirectory(directory);
            }

            await base.DisposeAsync().ConfigureAwait(false);
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing && !_closed)
            {
                _closed = true;
                _file.Flush(flushToDisk: true);
                _file.Dispose();
                SyncDirectory(directory);
            }

            base.Dispose(disposing);
        }
    }
}
