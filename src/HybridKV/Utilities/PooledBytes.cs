using System.Buffers;

namespace HybridKV.Utilities;

/// <summary>An exact-length byte buffer rented from <see cref="ArrayPool{T}.Shared"/>; disposing returns it once.</summary>
internal sealed class PooledBytes : IMemoryOwner<byte>
{
    private byte[]? _array;
    private readonly int _length;

    private PooledBytes(byte[] array, int length)
    {
        _array = array;
        _length = length;
    }

    public static PooledBytes CopyOf(ReadOnlySpan<byte> bytes)
    {
        byte[] array = ArrayPool<byte>.Shared.Rent(bytes.Length);
        bytes.CopyTo(array);
        return new PooledBytes(array, bytes.Length);
    }

    public Memory<byte> Memory
    {
        get
        {
            byte[]? array = _array;
            ObjectDisposedException.ThrowIf(array is null, this);
            return array.AsMemory(0, _length);
        }
    }

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _array, null) is { } array)
        {
            ArrayPool<byte>.Shared.Return(array);
        }
    }
}
