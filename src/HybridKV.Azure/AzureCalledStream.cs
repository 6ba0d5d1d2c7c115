namespace HybridKV.Azure;

/// <summary>
/// Wraps an Azure SDK stream (a part being uploaded block by block, or downloaded) so that each call is bounded by
/// <see cref="AzureRetryOptions.MaxTotalTime"/> and fails as an <see cref="IOException"/> naming the blob (a
/// <see cref="FileNotFoundException"/> when it does not exist), as the checkpoint catalog expects of a store.
/// </summary>
internal sealed class AzureCalledStream(Stream inner, string blob, TimeSpan maxTotalTime, AzureCalls.Failure fail) : Stream
{
    private int _disposed;

    public override bool CanRead => inner.CanRead;

    public override bool CanSeek => false;

    public override bool CanWrite => inner.CanWrite;

    public override long Length => throw new NotSupportedException();

    public override long Position
    {
        get => inner.Position;
        set => throw new NotSupportedException();
    }

    public override int Read(byte[] buffer, int offset, int count) =>
        ReadAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
        await AzureCalls.RunAsync(async token => await inner.ReadAsync(buffer, token).ConfigureAwait(false),
            $"Reading '{blob}'", maxTotalTime, fail, cancellationToken).ConfigureAwait(false);

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override void Write(byte[] buffer, int offset, int count) =>
        WriteAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

    public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) =>
        await AzureCalls.RunAsync(async token => await inner.WriteAsync(buffer, token).ConfigureAwait(false),
            $"Writing '{blob}'", maxTotalTime, fail, cancellationToken).ConfigureAwait(false);

    public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override void Flush() => FlushAsync(CancellationToken.None).GetAwaiter().GetResult();

    public override Task FlushAsync(CancellationToken cancellationToken) =>
        AzureCalls.RunAsync(token => inner.FlushAsync(token), $"Writing '{blob}'", maxTotalTime, fail, cancellationToken);

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();

    /// <summary>Disposing an upload commits its blocks: the part is durable when this returns.</summary>
    public override async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            await AzureCalls.RunAsync(async _ => await inner.DisposeAsync().ConfigureAwait(false),
                $"Committing '{blob}'", maxTotalTime, fail, CancellationToken.None).ConfigureAwait(false);
        }

        await base.DisposeAsync().ConfigureAwait(false);
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing && Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            AzureCalls.RunAsync(async _ => await inner.DisposeAsync().ConfigureAwait(false),
                $"Committing '{blob}'", maxTotalTime, fail, CancellationToken.None).GetAwaiter().GetResult();
        }

        base.Dispose(disposing);
    }
}
