using HybridKV.Checkpoints;
using HybridKV.Utilities;

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

    private sealed class GatedStream(Stream inner, GatedCheckpointStore gates) : WriteThroughStream(inner)
    {
        // Writes are held on the asynchronous path only, so the synchronous one must not pass them by.
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            gates._writeReached.TrySetResult();
            if (gates.HoldSnapshotWrites is { } hold)
            {
                await hold;
            }

            await Inner.WriteAsync(buffer, cancellationToken);
        }

        public override async ValueTask DisposeAsync()
        {
            gates._durabilityReached.TrySetResult();
            if (gates.HoldSnapshotDurability is { } hold)
            {
                await hold;
            }

            await Inner.DisposeAsync();
            await base.DisposeAsync();
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                Inner.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
