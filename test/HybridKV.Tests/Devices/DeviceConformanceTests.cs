using FsCheck;
using FsCheck.Fluent;
using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Devices;

/// <summary>
/// What every device must do, run against each one by a derived class: round trips at random aligned offsets,
/// requests across segment boundaries, concurrent I/O, truncation, zeros for unwritten space, and clear rejection of
/// misaligned or out-of-range requests.
/// </summary>
/// <remarks>Shared by the Azure tests (linked into HybridKV.Azure.Tests), so it depends on nothing of this project but
/// <see cref="TestScale"/>; the local devices' derived classes are in LocalDeviceConformanceTests.cs.</remarks>
public abstract class DeviceConformanceTests : IDisposable
{
    protected const int Sector = 512;
    protected const long Segment = 8 * 1024;

    /// <summary>Creates a fresh, empty device with <see cref="Sector"/>-byte sectors and <see cref="Segment"/>-byte segments.</summary>
    protected abstract StorageDevice CreateDevice();

    /// <summary>How many segments hold data in storage right now.</summary>
    protected abstract int StoredSegmentCount(StorageDevice device);

    /// <summary>Whether what is written can be read back (false only for the null device).</summary>
    protected virtual bool Persists => true;

    public virtual void Dispose() => GC.SuppressFinalize(this);

    private byte[] Expected(byte[] written) => Persists ? written : new byte[written.Length];

    [Fact]
    public void Random_aligned_writes_read_back_as_a_byte_array_model_says()
    {
        const int Sectors = (int)(4 * Segment / Sector);
        Gen<(int Sector, int Count, byte Seed)> write =
            from start in Gen.Choose(0, Sectors - 1)
            from count in Gen.Choose(1, Math.Min(24, Sectors - start))
            from seed in Gen.Choose(1, 255)
            select (start, count, (byte)seed);

        Property property = Prop.ForAll<(int Sector, int Count, byte Seed)[]>(Arb.From(Gen.ArrayOf(write)), writes =>
        {
            using StorageDevice device = CreateDevice();
            byte[] model = new byte[Sectors * Sector];
            foreach ((int start, int count, byte seed) in writes)
            {
                byte[] data = Pattern(count * Sector, seed);
                device.WriteAsync((long)start * Sector, data).AsTask().GetAwaiter().GetResult();
                data.CopyTo(model, start * Sector);
            }

            byte[] actual = new byte[model.Length];
            device.ReadAsync(0, actual).AsTask().GetAwaiter().GetResult();
            Assert.Equal(Expected(model), actual);
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(25 * TestScale.Factor), property);
    }

    [Fact]
    public async Task A_request_across_segment_boundaries_round_trips()
    {
        using StorageDevice device = CreateDevice();
        byte[] data = Pattern((int)(2 * Segment + 2 * Sector), 7);
        long address = Segment - Sector;
        await device.WriteAsync(address, data);

        byte[] whole = new byte[data.Length];
        await device.ReadAsync(address, whole);
        Assert.Equal(Expected(data), whole);

        // A read that straddles one boundary only, starting inside the written range.
        byte[] part = new byte[2 * Sector];
        await device.ReadAsync(2 * Segment - Sector, part);
        Assert.Equal(Expected(data)[(int)Segment..(int)(Segment + 2 * Sector)], part);
    }

    [Fact]
    public async Task Unwritten_space_reads_as_zeros()
    {
        using StorageDevice device = CreateDevice();
        await device.WriteAsync(Segment, Pattern(Sector, 3));
        byte[] buffer = Pattern(2 * Sector, 9);
        await device.ReadAsync(3 * Segment, buffer);
        Assert.All(buffer, b => Assert.Equal(0, b));
        await device.ReadAsync(Segment + Sector, buffer);
        Assert.All(buffer, b => Assert.Equal(0, b));
    }

    [Fact]
    public async Task Concurrent_writes_and_reads_of_distinct_ranges_do_not_interfere()
    {
        using StorageDevice device = CreateDevice();
        const int Writers = 32;
        const int Length = 3 * Sector;
        await Task.WhenAll(Enumerable.Range(0, Writers).Select(i =>
            Task.Run(async () => await device.WriteAsync((long)i * Length, Pattern(Length, (byte)(i + 1))))));
        await Task.WhenAll(Enumerable.Range(0, Writers).Select(i => Task.Run(async () =>
        {
            byte[] buffer = new byte[Length];
            await device.ReadAsync((long)i * Length, buffer);
            Assert.Equal(Expected(Pattern(Length, (byte)(i + 1))), buffer);
        })));
    }

    [Fact]
    public async Task Truncation_deletes_whole_segments_below_the_address_and_refuses_reads_there()
    {
        using StorageDevice device = CreateDevice();
        for (int segment = 0; segment < 4; segment++)
        {
            await device.WriteAsync(segment * Segment, Pattern(Sector, (byte)(segment + 1)));
        }

        Assert.Equal(Persists ? 4 : 0, StoredSegmentCount(device));
        await device.TruncateUntilAsync(2 * Segment + Sector);
        Assert.Equal(2 * Segment + Sector, device.BeginAddress);
        Assert.Equal(Persists ? 2 : 0, StoredSegmentCount(device));

        var refused = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(
            async () => await device.ReadAsync(Segment, new byte[Sector]));
        Assert.Contains("begin address", refused.Message, StringComparison.Ordinal);

        byte[] kept = new byte[Sector];
        await device.ReadAsync(3 * Segment, kept);
        Assert.Equal(Expected(Pattern(Sector, 4)), kept);

        // Truncating to a lower address changes nothing.
        await device.TruncateUntilAsync(Segment);
        Assert.Equal(2 * Segment + Sector, device.BeginAddress);
    }

    [Fact]
    public async Task Misaligned_and_out_of_range_requests_are_rejected_before_reaching_storage()
    {
        using StorageDevice device = CreateDevice();
        var address = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(
            async () => await device.WriteAsync(Sector / 2, new byte[Sector]));
        Assert.Equal("address", address.ParamName);
        Assert.Contains("sector size", address.Message, StringComparison.Ordinal);

        var length = await Assert.ThrowsAsync<ArgumentException>(
            async () => await device.ReadAsync(0, new byte[Sector + 1]));
        Assert.Contains("multiple of the sector size", length.Message, StringComparison.Ordinal);

        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(async () => await device.WriteAsync(-Sector, new byte[Sector]));
        Assert.Equal(0, StoredSegmentCount(device));
    }

    [Fact]
    public async Task A_canceled_request_and_a_disposed_device_fail_clearly()
    {
        StorageDevice device = CreateDevice();
        using var canceled = new CancellationTokenSource();
        await canceled.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(
            async () => await device.WriteAsync(0, new byte[Sector], canceled.Token));

        device.Dispose();
        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await device.WriteAsync(0, new byte[Sector]));
        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await device.ReadAsync(0, new byte[Sector]));
        device.Dispose();
    }

    protected static byte[] Pattern(int length, byte seed)
    {
        byte[] data = new byte[length];
        for (int i = 0; i < length; i++)
        {
            data[i] = (byte)(seed + i * 31 + (i >> 9));
        }

        return data;
    }
}
