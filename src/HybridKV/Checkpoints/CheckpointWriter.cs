using System.Text.Json;

namespace HybridKV.Checkpoints;

/// <summary>Writes the parts of one checkpoint, then commits it. Until committed, the checkpoint is invisible.</summary>
public sealed class CheckpointWriter
{
    private readonly CheckpointCatalog _catalog;
    private readonly List<CheckpointPart> _parts = new();

    // Parts whose bytes are written but which are not yet durable.
    private readonly List<(string Name, ChecksumStream Stream)> _written = new();
    private bool _committed;

    internal CheckpointWriter(CheckpointCatalog catalog, Guid token)
    {
        _catalog = catalog;
        Token = token;
    }

    /// <summary>The checkpoint's identity.</summary>
    public Guid Token { get; }

    /// <summary>Writes a part through <paramref name="write"/>, recording its length and checksum; durable on return.</summary>
    public async Task WritePartAsync(string name, Func<Stream, CancellationToken, Task> write,
        CancellationToken cancellationToken = default)
    {
        await WritePartBytesAsync(name, write, cancellationToken).ConfigureAwait(false);
        await MakePartsDurableAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Writes a part through <paramref name="write"/> and returns once its bytes have left the caller's buffers, before
    /// the part is durable: <see cref="MakePartsDurableAsync"/> (or the commit) makes it so. A snapshot is copied while
    /// updates may not change the log in place, and only that copy needs to finish before they may (CPR App. D).
    /// </summary>
    internal async Task WritePartBytesAsync(string name, Func<Stream, CancellationToken, Task> write,
        CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(write);
        if (_committed)
        {
            throw new InvalidOperationException($"Checkpoint {Token} is already committed.");
        }

        if (_parts.Any(p => p.Name == name) || _written.Any(p => p.Name == name))
        {
            throw new ArgumentException($"Checkpoint {Token} already has a part '{name}'.", nameof(name));
        }

        Stream target = await _catalog.Store.CreatePartAsync(Token, name, cancellationToken).ConfigureAwait(false);
        var checksummed = new ChecksumStream(target);
        try
        {
            await write(checksummed, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await checksummed.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        _written.Add((name, checksummed));
    }

    /// <summary>Makes every part written so far durable (the checkpoint store's stream is durable once disposed).</summary>
    internal async Task MakePartsDurableAsync()
    {
        // Every stream is disposed, even after one fails, so that a failed checkpoint leaves no file open.
        Exception? failure = null;
        foreach ((string name, ChecksumStream stream) in _written)
        {
            try
            {
                await stream.DisposeAsync().ConfigureAwait(false);
                _parts.Add(new CheckpointPart(name, stream.Length, stream.Crc32C));
            }
#pragma warning disable CA1031 // Rethrown below, after the other parts are closed.
            catch (Exception error)
#pragma warning restore CA1031
            {
                failure ??= error;
            }
        }

        _written.Clear();
        if (failure is not null)
        {
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failure);
        }
    }

    /// <summary>Commits the checkpoint: after this returns it is durable and visible to recovery.</summary>
    public async Task<CheckpointManifest> CommitAsync(JsonElement metadata, CancellationToken cancellationToken = default)
    {
        if (_committed)
        {
            throw new InvalidOperationException($"Checkpoint {Token} is already committed.");
        }

        await MakePartsDurableAsync().ConfigureAwait(false);
        CheckpointManifest manifest = await _catalog.CommitAsync(Token, _parts, metadata, cancellationToken)
            .ConfigureAwait(false);
        _committed = true;
        return manifest;
    }

    /// <summary>A write-only stream that counts and checksums what passes through it, and owns the stream it wraps.</summary>
    private sealed class ChecksumStream(Stream inner) : Stream
    {
        public uint Crc32C { get; private set; }

        public override bool CanRead => false;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => _length;

        private long _length;

        public override long Position
        {
            get => _length;
            set => throw new NotSupportedException();
        }

        public override void Write(byte[] buffer, int offset, int count) => Write(buffer.AsSpan(offset, count));

        public override void Write(ReadOnlySpan<byte> buffer)
        {
            Crc32C = Checkpoints.Crc32C.Append(Crc32C, buffer);
            _length += buffer.Length;
            inner.Write(buffer);
        }

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            Crc32C = Checkpoints.Crc32C.Append(Crc32C, buffer.Span);
            _length += buffer.Length;
            await inner.WriteAsync(buffer, cancellationToken).ConfigureAwait(false);
        }

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

        public override void Flush() => inner.Flush();

        public override Task FlushAsync(CancellationToken cancellationToken) => inner.FlushAsync(cancellationToken);

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        public override async ValueTask DisposeAsync()
        {
            await inner.DisposeAsync().ConfigureAwait(false);
            await base.DisposeAsync().ConfigureAwait(false);
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                inner.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
