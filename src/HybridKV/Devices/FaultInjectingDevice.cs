namespace HybridKV.Devices;

/// <summary>One request as a <see cref="FaultInjectingDevice"/> sees it.</summary>
/// <param name="Address">The device address of the request (within one segment).</param>
/// <param name="Length">Its length in bytes.</param>
/// <param name="Sequence">How many requests of the same kind came before it (0 for the first).</param>
public readonly record struct DeviceRequest(long Address, int Length, long Sequence);

/// <summary>
/// Wraps a device and injects the failures storage really has: errors on chosen writes or reads, added latency, and
/// writes torn at sector granularity (a prefix of the sectors lands, then the write fails). For tests of everything
/// built on devices.
/// </summary>
public sealed class FaultInjectingDevice : StorageDevice
{
    private readonly StorageDevice _inner;
    private long _writes;
    private long _reads;
    private long _deletes;

    /// <summary>Wraps <paramref name="inner"/>, which this device then owns and disposes.</summary>
    public FaultInjectingDevice(StorageDevice inner)
        : base(inner.SectorSize, inner.SegmentSize, inner.Capacity)
    {
        _inner = inner;
    }

    /// <summary>Writes for which this returns true fail with <see cref="StorageDeviceException"/>, writing nothing.</summary>
    public Func<DeviceRequest, bool>? FailWrite { get; set; }

    /// <summary>Reads for which this returns true fail with <see cref="StorageDeviceException"/>.</summary>
    public Func<DeviceRequest, bool>? FailRead { get; set; }

    /// <summary>
    /// For a write, the number of leading sectors that land before it fails (a torn write), or null to leave it whole.
    /// </summary>
    public Func<DeviceRequest, int?>? TearWrite { get; set; }

    /// <summary>Added before every request completes.</summary>
    public TimeSpan Latency { get; set; }

    /// <summary>While set, reads wait for this task before they are served (to hold an operation pending).</summary>
    public Task? HoldReads { get; set; }

    /// <summary>While set, writes wait for this task before they are made (to keep the log's memory full).</summary>
    public Task? HoldWrites { get; set; }

    /// <summary>While set, flushes (a checkpoint's last step before it commits) wait for this task.</summary>
    public Task? HoldFlushes { get; set; }

    /// <summary>While set, segment deletions (truncation) wait for this task before they are made.</summary>
    public Task? HoldDeletes { get; set; }

    /// <summary>The number of segment deletions asked for (made, held or failed).</summary>
    public long DeleteCount => Interlocked.Read(ref _deletes);

    /// <summary>The number of write requests seen.</summary>
    public long WriteCount => Interlocked.Read(ref _writes);

    /// <summary>The number of read requests seen.</summary>
    public long ReadCount => Interlocked.Read(ref _reads);

    /// <summary>The wrapped device.</summary>
    public StorageDevice Inner => _inner;

    /// <inheritdoc/>
    protected override async ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
    {
        DeviceRequest request = NextRequest(segment, offset, source.Length, ref _writes);
        if (HoldWrites is { } hold)
        {
            await hold.WaitAsync(cancellationToken).ConfigureAwait(false);
        }

        await DelayAsync(cancellationToken).ConfigureAwait(false);
        if (FailWrite?.Invoke(request) == true)
        {
            throw new StorageDeviceException($"Injected write failure at address {request.Address}.");
        }

        int? landed = TearWrite?.Invoke(request);
        if (landed is int sectors && sectors * SectorSize < source.Length)
        {
            await _inner.WriteAsync(request.Address, source[..(sectors * SectorSize)], cancellationToken)
                .ConfigureAwait(false);
            throw new StorageDeviceException(
                $"Injected torn write at address {request.Address}: {sectors} of {source.Length / SectorSize} sectors landed.");
        }

        await _inner.WriteAsync(request.Address, source, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override async ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        DeviceRequest request = NextRequest(segment, offset, destination.Length, ref _reads);
        if (HoldReads is { } hold)
        {
            await hold.WaitAsync(cancellationToken).ConfigureAwait(false);
        }

        await DelayAsync(cancellationToken).ConfigureAwait(false);
        if (FailRead?.Invoke(request) == true)
        {
            throw new StorageDeviceException($"Injected read failure at address {request.Address}.");
        }

        await _inner.ReadAsync(request.Address, destination, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override async ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _deletes);
        if (HoldDeletes is { } hold)
        {
            await hold.WaitAsync(cancellationToken).ConfigureAwait(false);
        }

        await _inner.TruncateUntilAsync((segment + 1) << SegmentSizeBits, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override async ValueTask FlushCoreAsync(CancellationToken cancellationToken)
    {
        if (HoldFlushes is { } hold)
        {
            await hold.WaitAsync(cancellationToken).ConfigureAwait(false);
        }

        await _inner.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken) =>
        _inner.ReadLabelAsync(cancellationToken);

    /// <inheritdoc/>
    protected override ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken) =>
        _inner.WriteLabelAsync(label, cancellationToken);

    /// <inheritdoc/>
    protected override ValueTask EraseCoreAsync(CancellationToken cancellationToken) =>
        _inner.EraseAsync(cancellationToken);

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _inner.Dispose();
        }

        base.Dispose(disposing);
    }

    /// <summary>Describes a request, numbered among those of its kind.</summary>
    private DeviceRequest NextRequest(long segment, long offset, int length, ref long counter) =>
        new((segment << SegmentSizeBits) + offset, length, Interlocked.Increment(ref counter) - 1);

    private Task DelayAsync(CancellationToken cancellationToken) =>
        Latency > TimeSpan.Zero ? Task.Delay(Latency, cancellationToken) : Task.CompletedTask;
}
