using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Devices;

[Trait("Category", "Device")]
public sealed class MemoryDeviceConformanceTests : DeviceConformanceTests
{
    protected override StorageDevice CreateDevice() => new MemoryDevice(Sector, Segment);

    protected override int StoredSegmentCount(StorageDevice device) => ((MemoryDevice)device).SegmentCount;
}

[Trait("Category", "Device")]
public sealed class NullDeviceConformanceTests : DeviceConformanceTests
{
    protected override bool Persists => false;

    protected override StorageDevice CreateDevice() => new NullDevice(Sector, Segment);

    protected override int StoredSegmentCount(StorageDevice device) => 0;
}

[Trait("Category", "Device")]
public sealed class FaultInjectingDeviceConformanceTests : DeviceConformanceTests
{
    protected override StorageDevice CreateDevice() => new FaultInjectingDevice(new MemoryDevice(Sector, Segment));

    protected override int StoredSegmentCount(StorageDevice device) =>
        ((MemoryDevice)((FaultInjectingDevice)device).Inner).SegmentCount;
}

/// <summary>The file device, with direct I/O or buffered I/O, reading through io_uring (at depth 64 or 1) or threads.</summary>
public abstract class LocalFileDeviceConformanceTests : DeviceConformanceTests
{
    private readonly TempDirectory _directory = new();

    protected abstract bool UseDirectIo { get; }

    protected virtual bool UseIoUring => true;

    protected virtual int ReadQueueDepth => 64;

    protected override StorageDevice CreateDevice()
    {
        var device = new LocalFileDevice(new LocalFileDeviceOptions
        {
            Directory = _directory.NewSubdirectory(),
            SectorSize = Sector,
            SegmentSize = Segment,
            UseDirectIo = UseDirectIo,
            UseIoUring = UseIoUring,
            ReadQueueDepth = ReadQueueDepth,
        });
        // Where the kernel has io_uring, a configuration meant to use it must; where it has none, the fallback is what
        // runs (and is what this configuration then tests).
        Assert.Equal(UseIoUring && IoUringSupport.Available, device.UsesIoUring);
        return device;
    }

    protected override int StoredSegmentCount(StorageDevice device) =>
        Directory.GetFiles(((LocalFileDevice)device).DirectoryPath, "hlog.*").Length;

    public override void Dispose()
    {
        _directory.Dispose();
        base.Dispose();
        GC.SuppressFinalize(this);
    }
}

[Trait("Category", "Device")]
public sealed class DirectLocalFileDeviceConformanceTests : LocalFileDeviceConformanceTests
{
    protected override bool UseDirectIo => true;
}

[Trait("Category", "Device")]
public sealed class BufferedLocalFileDeviceConformanceTests : LocalFileDeviceConformanceTests
{
    protected override bool UseDirectIo => false;
}

[Trait("Category", "Device")]
public sealed class ThreadReadLocalFileDeviceConformanceTests : LocalFileDeviceConformanceTests
{
    protected override bool UseDirectIo => true;

    protected override bool UseIoUring => false;
}

/// <summary>One read in flight: every concurrent read beyond the first waits for a free slot.</summary>
[Trait("Category", "Device")]
public sealed class DepthOneLocalFileDeviceConformanceTests : LocalFileDeviceConformanceTests
{
    protected override bool UseDirectIo => true;

    protected override int ReadQueueDepth => 1;
}
