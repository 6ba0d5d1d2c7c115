namespace HybridKV.Devices;

/// <summary>A device that keeps nothing: writes complete at once and every read returns zeros.</summary>
public sealed class NullDevice : StorageDevice
{
    /// <summary>Creates a null device.</summary>
    public NullDevice(int sectorSize = 512, long segmentSize = 1L << 30)
        : base(sectorSize, segmentSize)
    {
    }

    /// <inheritdoc/>
    protected override ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken) =>
        ValueTask.CompletedTask;

    /// <inheritdoc/>
    protected override ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        destination.Span.Clear();
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken) =>
        ValueTask.CompletedTask;

    /// <inheritdoc/>
    protected override ValueTask FlushCoreAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;

    /// <inheritdoc/>
    protected override ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken) =>
        ValueTask.FromResult<byte[]?>(null);

    /// <inheritdoc/>
    protected override ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken) =>
        ValueTask.CompletedTask;

    /// <inheritdoc/>
    protected override ValueTask EraseCoreAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;
}
