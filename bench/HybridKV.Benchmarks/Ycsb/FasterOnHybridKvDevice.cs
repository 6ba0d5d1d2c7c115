using System.Buffers;
using FASTER.core;
using HybridKV.Devices;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// FASTER's device interface over HybridKV's <see cref="LocalFileDevice"/>, so that FASTER can run without the page
/// cache (<c>--peer-page-cache off</c>): FASTER 2.6.5 has no such option on Linux, because its managed device asks for
/// unbuffered I/O with Windows' <c>FILE_FLAG_NO_BUFFERING</c>, which .NET ignores there (the runner checked the open
/// file's flags: no <c>O_DIRECT</c>). FASTER's segment <c>s</c>, offset <c>o</c> is the HybridKV device's address
/// <c>s * 2^30 + o</c>; both use 1 GiB segments and 4 KiB sectors. Segments are never removed during a run.
/// </summary>
public sealed class FasterOnHybridKvDevice : StorageDeviceBase
{
    private readonly LocalFileDevice _device;

    /// <summary>A FASTER device named <paramref name="fileName"/> whose I/O goes to <paramref name="device"/>.</summary>
    public FasterOnHybridKvDevice(LocalFileDevice device, string fileName)
        : base(fileName, (uint)device.SectorSize, FASTER.core.Devices.CAPACITY_UNSPECIFIED)
    {
        ArgumentNullException.ThrowIfNull(device);
        _device = device;
    }

    /// <inheritdoc />
    public override unsafe void ReadAsync(int segmentId, ulong sourceAddress, IntPtr destinationAddress, uint readLength,
        DeviceIOCompletionCallback callback, object context)
    {
        var memory = new NativeMemory((byte*)destinationAddress, (int)readLength);
        Finish(_device.ReadAsync(Address(segmentId, sourceAddress), memory.Memory), readLength, callback, context);
    }

    /// <inheritdoc />
    public override unsafe void WriteAsync(IntPtr sourceAddress, int segmentId, ulong destinationAddress,
        uint numBytesToWrite, DeviceIOCompletionCallback callback, object context)
    {
        var memory = new NativeMemory((byte*)sourceAddress, (int)numBytesToWrite);
        Finish(_device.WriteAsync(Address(segmentId, destinationAddress), memory.Memory), numBytesToWrite, callback,
            context);
    }

    /// <inheritdoc />
    public override void RemoveSegmentAsync(int segment, AsyncCallback callback, IAsyncResult result) => callback(result);

    /// <inheritdoc />
    public override void Dispose()
    {
        // The LocalFileDevice belongs to the store that made it.
    }

    private static long Address(int segmentId, ulong offset) => ((long)segmentId << 30) + (long)offset;

    private static async void Finish(ValueTask io, uint bytes, DeviceIOCompletionCallback callback, object context)
    {
        uint error = 0;
        try
        {
            await io.ConfigureAwait(false);
        }
        catch (StorageDeviceException)
        {
            error = 1;
        }

        callback(error, error == 0 ? bytes : 0, context);
    }

    /// <summary>Memory over a native buffer that FASTER owns and keeps alive until the callback.</summary>
    private sealed unsafe class NativeMemory(byte* pointer, int length) : MemoryManager<byte>
    {
        public override Span<byte> GetSpan() => new(pointer, length);

        public override MemoryHandle Pin(int elementIndex = 0) => new(pointer + elementIndex);

        public override void Unpin()
        {
        }

        protected override void Dispose(bool disposing)
        {
        }
    }
}
