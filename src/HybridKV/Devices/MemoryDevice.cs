using System.Collections.Concurrent;

namespace HybridKV.Devices;

/// <summary>
/// A device in RAM: for tests, and for volatile stores that still evict pages from the log's memory budget. Segments
/// are allocated when first written and freed when truncated.
/// </summary>
public sealed class MemoryDevice : StorageDevice
{
    private readonly ConcurrentDictionary<long, byte[]> _segments = new();
    private byte[]? _label;

    /// <summary>Creates an empty memory device.</summary>
    public MemoryDevice(int sectorSize = 512, long segmentSize = 1L << 24, long capacity = long.MaxValue)
        : base(sectorSize, segmentSize, capacity)
    {
        if (segmentSize > Array.MaxLength)
        {
            throw new ArgumentOutOfRangeException(nameof(segmentSize), segmentSize,
                $"A memory device's segment must fit in one array ({Array.MaxLength} bytes).");
        }
    }

    /// <summary>The number of segments holding memory.</summary>
    public int SegmentCount => _segments.Count;

    /// <inheritdoc/>
    protected override ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        byte[] memory = _segments.GetOrAdd(segment, static (_, size) => new byte[size], (int)SegmentSize);
        source.Span.CopyTo(memory.AsSpan((int)offset));
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        if (_segments.TryGetValue(segment, out byte[]? memory))
        {
            memory.AsSpan((int)offset, destination.Length).CopyTo(destination.Span);
        }
        else
        {
            destination.Span.Clear();
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken)
    {
        _segments.TryRemove(segment, out _);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask FlushCoreAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;

    /// <inheritdoc/>
    protected override ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken) =>
        ValueTask.FromResult(Volatile.Read(ref _label)?.ToArray());

    /// <inheritdoc/>
    protected override ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken)
    {
        Volatile.Write(ref _label, label.ToArray());
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask EraseCoreAsync(CancellationToken cancellationToken)
    {
        _segments.Clear();
        Volatile.Write(ref _label, null);
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        _segments.Clear();
        base.Dispose(disposing);
    }
}
