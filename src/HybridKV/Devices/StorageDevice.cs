using System.Numerics;
using HybridKV.Utilities;

namespace HybridKV.Devices;

/// <summary>
/// A segmented, sector-aligned address space on some storage, read and written asynchronously (FASTER §5): the home
/// of the part of the log that is not in memory. Addresses are byte offsets; segment <c>n</c> holds
/// <c>[n * SegmentSize, (n + 1) * SegmentSize)</c>.
/// </summary>
/// <remarks>
/// Every request must start at a multiple of <see cref="SectorSize"/> and have a length that is a multiple of it;
/// anything else is rejected with an <see cref="ArgumentException"/> before it reaches the storage. A request that
/// crosses a segment boundary is split here, so implementations only ever see requests within one segment. Space that
/// was never written reads as zeros. I/O failures surface as <see cref="StorageDeviceException"/>.
/// </remarks>
public abstract class StorageDevice : IDisposable
{
    private long _beginAddress;
    private long _bytesWritten;
    private long _bytesRead;
    private int _disposed;

    /// <summary>Initializes the device's geometry.</summary>
    /// <param name="sectorSize">The I/O alignment in bytes: a power of two from 512 to 65536.</param>
    /// <param name="segmentSize">The size of one segment: a power of two, at least one sector.</param>
    /// <param name="capacity">The highest address (exclusive) the device accepts, or <see cref="long.MaxValue"/>.</param>
    protected StorageDevice(int sectorSize, long segmentSize, long capacity = long.MaxValue)
    {
        if (sectorSize < 512 || sectorSize > 65536 || !BitOperations.IsPow2(sectorSize))
        {
            throw new ArgumentOutOfRangeException(nameof(sectorSize), sectorSize,
                "The sector size must be a power of two from 512 to 65536 bytes.");
        }

        if (segmentSize < sectorSize || !BitOperations.IsPow2(segmentSize))
        {
            throw new ArgumentOutOfRangeException(nameof(segmentSize), segmentSize,
                $"The segment size must be a power of two of at least one sector ({sectorSize} bytes).");
        }

        if (capacity <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(capacity), capacity, "The capacity must be positive.");
        }

        SectorSize = sectorSize;
        SegmentSize = segmentSize;
        SegmentSizeBits = BitOperations.Log2((ulong)segmentSize);
        Capacity = capacity;
    }

    /// <summary>The alignment of every request's address and length, in bytes.</summary>
    public int SectorSize { get; }

    /// <summary>The size of one segment in bytes (a power of two).</summary>
    public long SegmentSize { get; }

    /// <summary>The highest address (exclusive) this device accepts.</summary>
    public long Capacity { get; }

    /// <summary>The number of bytes of the writes issued since the device was created (counted as each segment's
    /// part is issued, as reads are).</summary>
    public long BytesWritten => Interlocked.Read(ref _bytesWritten);

    /// <summary>The number of bytes read by completed reads since the device was created.</summary>
    public long BytesRead => Interlocked.Read(ref _bytesRead);

    /// <summary>The lowest address that can still be read: everything below was truncated away.</summary>
    public long BeginAddress => Volatile.Read(ref _beginAddress);

    /// <summary>log2 of <see cref="SegmentSize"/>.</summary>
    protected int SegmentSizeBits { get; }

    /// <summary>Whether <see cref="Dispose()"/> was called.</summary>
    protected bool IsDisposed => Volatile.Read(ref _disposed) != 0;

    /// <summary>Writes <paramref name="source"/> at <paramref name="address"/>.</summary>
    /// <exception cref="ArgumentException">The address or length is not sector-aligned, or out of range.</exception>
    /// <exception cref="StorageDeviceException">The storage failed.</exception>
    public ValueTask WriteAsync(long address, ReadOnlyMemory<byte> source, CancellationToken cancellationToken = default)
    {
        CheckRequest(address, source.Length, nameof(source), forRead: false);
        cancellationToken.ThrowIfCancellationRequested();
        if (LengthWithinSegment(address, source.Length) == source.Length)
        {
            // One segment (every page flush): the segment's own task, with no state machine around it.
            Interlocked.Add(ref _bytesWritten, source.Length);
            return WriteSegmentAsync(address >> SegmentSizeBits, address & (SegmentSize - 1), source, cancellationToken);
        }

        return WriteSegmentsAsync(address, source, cancellationToken);
    }

    private async ValueTask WriteSegmentsAsync(long address, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
    {
        while (!source.IsEmpty)
        {
            int length = LengthWithinSegment(address, source.Length);
            Interlocked.Add(ref _bytesWritten, length);
            await WriteSegmentAsync(address >> SegmentSizeBits, address & (SegmentSize - 1), source[..length],
                cancellationToken).ConfigureAwait(false);
            address += length;
            source = source[length..];
        }
    }

    /// <summary>Reads <paramref name="destination"/>.Length bytes from <paramref name="address"/>.</summary>
    /// <exception cref="ArgumentException">The address or length is not sector-aligned, or out of range.</exception>
    /// <exception cref="StorageDeviceException">The storage failed.</exception>
    public ValueTask ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
        ReadAsync(address, destination, completeInline: false, cancellationToken);

    /// <summary>
    /// <see cref="ReadAsync(long, Memory{byte}, CancellationToken)"/>; with <paramref name="completeInline"/>, a device
    /// may run the continuation on the thread that learned of the completion (an operation that went pending only
    /// queues itself there; anything that does more must not ask for it).
    /// </summary>
    internal ValueTask ReadAsync(long address, Memory<byte> destination, bool completeInline,
        CancellationToken cancellationToken)
    {
        CheckRequest(address, destination.Length, nameof(destination), forRead: true);
        cancellationToken.ThrowIfCancellationRequested();
        if (LengthWithinSegment(address, destination.Length) == destination.Length)
        {
            // One segment (nearly every read): the segment's own task, with no state machine around it. Counted when
            // issued.
            Interlocked.Add(ref _bytesRead, destination.Length);
            long segment = address >> SegmentSizeBits;
            long offset = address & (SegmentSize - 1);
            return completeInline
                ? ReadSegmentCompletingInlineAsync(segment, offset, destination, cancellationToken)
                : ReadSegmentAsync(segment, offset, destination, cancellationToken);
        }

        return ReadSegmentsAsync(address, destination, cancellationToken);
    }

    /// <summary>
    /// Completes, on the caller's thread, reads the storage has finished but the device has not yet reported; for a
    /// thread about to block until reads complete. False if there were none (or another thread is reporting them).
    /// </summary>
    internal virtual bool TryCompleteFinishedReads() => false;

    /// <summary>Whether <see cref="TryCompleteFinishedReads"/> can ever complete a read (a device whose completions
    /// a waiting thread can take itself).</summary>
    internal virtual bool TakesFinishedReads => false;

    /// <summary>Reads within one segment, the continuation allowed to run where the completion is learned (see
    /// <see cref="ReadAsync(long, Memory{byte}, bool, CancellationToken)"/>); by default as any read.</summary>
    private protected virtual ValueTask ReadSegmentCompletingInlineAsync(long segment, long offset, Memory<byte> destination,
        CancellationToken cancellationToken) =>
        ReadSegmentAsync(segment, offset, destination, cancellationToken);

    private async ValueTask ReadSegmentsAsync(long address, Memory<byte> destination, CancellationToken cancellationToken)
    {
        while (!destination.IsEmpty)
        {
            int length = LengthWithinSegment(address, destination.Length);
            await ReadSegmentAsync(address >> SegmentSizeBits, address & (SegmentSize - 1), destination[..length],
                cancellationToken).ConfigureAwait(false);
            Interlocked.Add(ref _bytesRead, length);
            address += length;
            destination = destination[length..];
        }
    }

    /// <summary>Makes every completed write durable (for example, fsync).</summary>
    public ValueTask FlushAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        return FlushCoreAsync(cancellationToken);
    }

    /// <summary>
    /// Forgets everything below <paramref name="address"/>: whole segments below it are deleted, and reads below it
    /// fail from now on. Moving the begin address backwards is not possible; a smaller address is ignored.
    /// </summary>
    public async ValueTask TruncateUntilAsync(long address, CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        ArgumentOutOfRangeException.ThrowIfNegative(address);
        long oldBegin = BeginAddress;
        if (!Monotonic.TryRaise(ref _beginAddress, address))
        {
            return;
        }

        await DeleteSegmentsAsync(oldBegin >> SegmentSizeBits, address >> SegmentSizeBits, cancellationToken)
            .ConfigureAwait(false);
    }

    /// <summary>
    /// Reads the device's label: a small record kept beside the segments that says which log they hold (the store
    /// writes its identity there when it starts a new log).
    /// </summary>
    /// <returns>The label, or <see langword="null"/> when the device has none.</returns>
    /// <exception cref="InvalidDataException">The device holds segments but no label (written by an older format, or
    /// the label was removed).</exception>
    /// <exception cref="StorageDeviceException">The storage failed.</exception>
    public ValueTask<byte[]?> ReadLabelAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        return ReadLabelCoreAsync(cancellationToken);
    }

    /// <summary>Replaces the label, durably and atomically: a crash leaves the old label or the new one.</summary>
    /// <exception cref="StorageDeviceException">The storage failed.</exception>
    public ValueTask WriteLabelAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        return WriteLabelCoreAsync(label, cancellationToken);
    }

    /// <summary>Deletes every segment and the label, so that the device is empty again with begin address 0.</summary>
    /// <exception cref="StorageDeviceException">The storage failed.</exception>
    public async ValueTask EraseAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        await EraseCoreAsync(cancellationToken).ConfigureAwait(false);
        Volatile.Write(ref _beginAddress, 0);
    }

    /// <summary>Where the device keeps <paramref name="address"/>, for messages (a file and offset, for instance).</summary>
    public virtual string DescribeAddress(long address) =>
        $"{this}, segment {address >> SegmentSizeBits} at offset {address & (SegmentSize - 1)}";

    /// <summary>Reads the label, or null when there is none.</summary>
    protected abstract ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken);

    /// <summary>Replaces the label durably and atomically.</summary>
    protected abstract ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken);

    /// <summary>Deletes every segment and the label.</summary>
    protected abstract ValueTask EraseCoreAsync(CancellationToken cancellationToken);

    /// <summary>Writes within one segment; the request is validated and sector-aligned.</summary>
    protected abstract ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken);

    /// <summary>Reads within one segment; the request is validated and sector-aligned. Unwritten space is zeros.</summary>
    protected abstract ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken);

    /// <summary>Deletes a whole segment (truncation). Deleting a segment that does not exist is not an error.</summary>
    protected abstract ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken);

    /// <summary>
    /// Deletes the whole segments from <paramref name="first"/> to before <paramref name="until"/> (truncation), one at a
    /// time unless the device can do better (a local directory is synced once for all of them).
    /// </summary>
    protected virtual async ValueTask DeleteSegmentsAsync(long first, long until, CancellationToken cancellationToken)
    {
        for (long segment = first; segment < until; segment++)
        {
            await DeleteSegmentAsync(segment, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Makes completed writes durable.</summary>
    protected abstract ValueTask FlushCoreAsync(CancellationToken cancellationToken);

    /// <summary>Restores the begin address of a device reopened over existing storage.</summary>
    protected void RestoreBeginAddress(long address) => Volatile.Write(ref _beginAddress, address);

    /// <summary>Throws <see cref="ObjectDisposedException"/> once the device is disposed.</summary>
    protected void ThrowIfDisposed()
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }
    }

    private void CheckRequest(long address, int length, string bufferName, bool forRead)
    {
        ThrowIfDisposed();
        if (address < 0 || (address & (SectorSize - 1)) != 0)
        {
            throw new ArgumentOutOfRangeException(nameof(address), address,
                $"The address must be a non-negative multiple of the sector size ({SectorSize} bytes).");
        }

        if ((length & (SectorSize - 1)) != 0)
        {
            throw new ArgumentException(
                $"The length ({length} bytes) must be a multiple of the sector size ({SectorSize} bytes).", bufferName);
        }

        if (address > Capacity - length)
        {
            throw new ArgumentOutOfRangeException(nameof(address), address,
                $"The request [{address}, {address + length}) goes beyond the device's capacity of {Capacity} bytes.");
        }

        if (forRead && address < BeginAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(address), address,
                $"The address is below the device's begin address {BeginAddress}: that part was truncated.");
        }
    }

    private int LengthWithinSegment(long address, int remaining)
    {
        long toSegmentEnd = SegmentSize - (address & (SegmentSize - 1));
        return (int)Math.Min(remaining, toSegmentEnd);
    }

    /// <summary>Releases the device's resources.</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        Dispose(disposing: true);
        GC.SuppressFinalize(this);
    }

    /// <summary>Releases resources; called once.</summary>
    protected virtual void Dispose(bool disposing)
    {
    }
}
