namespace HybridKV.Utilities;

/// <summary>
/// A write-only stream that passes writes to another; a derived stream adds what happens around them (a checkpoint
/// part's fsync on close; in tests, writes held or slowed). Only the members below pass through: a write by another
/// overload goes through <see cref="Stream"/>'s defaults to these. Disposing it leaves the inner stream open.
/// </summary>
internal abstract class WriteThroughStream(Stream inner) : Stream
{
    protected Stream Inner => inner;

    public override bool CanRead => false;

    public override bool CanSeek => false;

    public override bool CanWrite => true;

    public override long Length => inner.Length;

    public override long Position
    {
        get => inner.Position;
        set => throw new NotSupportedException();
    }

    public override void Write(byte[] buffer, int offset, int count) => inner.Write(buffer, offset, count);

    public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) =>
        inner.WriteAsync(buffer, cancellationToken);

    public override void Flush() => inner.Flush();

    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();
}
