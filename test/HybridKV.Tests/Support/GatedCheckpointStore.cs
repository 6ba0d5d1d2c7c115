using HybridKV.Checkpoints;

namespace HybridKV.Tests.Support;

/// <summary>
/// A checkpoint store that can hold a snapshot part at its first write (the copy under way) or at its disposal (the
/// copy written, not yet durable), to catch a checkpoint at either point.
/// </summary>
public sealed class GatedCheckpointStore(CheckpointStore inner) : DelegatingCheckpointStore(inner)
{
    private readonly TaskCompletionSource _writeReached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _durabilityReached = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>While set, a snapshot part's writes wait for it.</summary>
    public Task? HoldSnapshotWrites { get; set; }

    /// <summary>While set, a snapshot part's disposal (which makes it durable) waits for it.</summary>
    public Task? HoldSnapshotDurability { get; set; }

    /// <summary>Completes when a snapshot part is first written to.</summary>
    public Task SnapshotWriteReached => _writeReached.Task;

    /// <summary>Completes when a snapshot part, all written, is asked to become durable.</summary>
    public Task SnapshotDurabilityReached => _durabilityReached.Task;

    public override async Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        Stream stream = await Inner.CreatePartAsync(token, part, cancellationToken);
        return part == CheckpointMetadata.SnapshotPart ? new GatedStream(stream, this) : stream;
    }

    private sealed class GatedStream(Stream inner, GatedCheckpointStore gates) : Stream
    {
        public override bool CanRead => false;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => inner.Length;

        public override long Position
        {
            get => inner.Position;
            set => throw new NotSupportedException();
        }

        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            gates._writeReached.TrySetResult();
            if (gates.HoldSnapshotWrites is { } hold)
            {
                await hold;
            }

            await inner.WriteAsync(buffer, cancellationToken);
        }

        public override void Flush() => inner.Flush();

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        public override async ValueTask DisposeAsync()
        {
            gates._durabilityReached.TrySetResult();
            if (gates.HoldSnapshotDurability is { } hold)
            {
                await hold;
            }

            await inner.DisposeAsync();
            await base.DisposeAsync();
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
