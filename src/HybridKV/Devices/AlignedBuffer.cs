using System.Buffers;
using System.Runtime.InteropServices;

namespace HybridKV.Devices;

/// <summary>
/// A block of native memory aligned for direct I/O, usable as <see cref="Memory{T}"/> without copying.
/// </summary>
public sealed unsafe class AlignedBuffer : MemoryManager<byte>
{
    private byte* _pointer;
    private readonly int _length;

    /// <summary>Allocates <paramref name="length"/> zeroed bytes aligned to <paramref name="alignment"/>.</summary>
    public AlignedBuffer(int length, int alignment)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
        {
            throw new ArgumentOutOfRangeException(nameof(alignment), alignment, "The alignment must be a power of two.");
        }

        _length = length;
        Alignment = alignment;
        _pointer = (byte*)NativeMemory.AlignedAlloc((nuint)Math.Max(length, 1), (nuint)alignment);
        NativeMemory.Clear(_pointer, (nuint)length);
    }

    /// <summary>The buffer's length in bytes.</summary>
    public int Length => _length;

    /// <summary>The alignment of the buffer's start, in bytes.</summary>
    public int Alignment { get; }

    /// <summary>The buffer's first byte, without <see cref="Pin"/>'s virtual call and handle: readers that walk a
    /// buffer record by record took 3 % of a compaction's processor time in <see cref="Pin"/>.</summary>
    internal byte* Pointer
    {
        get
        {
            System.Diagnostics.Debug.Assert(_pointer != null, "Not disposed.");
            return _pointer;
        }
    }

    /// <summary>The buffer as a span.</summary>
    public Span<byte> Span => GetSpan();

    /// <inheritdoc/>
    public override Span<byte> GetSpan()
    {
        ObjectDisposedException.ThrowIf(_pointer == null, this);
        return new Span<byte>(_pointer, _length);
    }

    /// <inheritdoc/>
    public override MemoryHandle Pin(int elementIndex = 0)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(elementIndex);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(elementIndex, _length);
        return new MemoryHandle(_pointer + elementIndex);
    }

    /// <inheritdoc/>
    public override void Unpin()
    {
    }

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        if (_pointer != null)
        {
            NativeMemory.AlignedFree(_pointer);
            _pointer = null;
        }
    }
}
