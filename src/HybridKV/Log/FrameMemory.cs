using System.Buffers;

namespace HybridKV.Log;

/// <summary>
/// A page frame seen as <see cref="Memory{T}"/>, so that a device can write it without a copy. It does not own the
/// memory: the log frees frames itself, after every flush from them has completed.
/// </summary>
internal sealed unsafe class FrameMemory : MemoryManager<byte>
{
    private readonly byte* _pointer;
    private readonly int _length;

    public FrameMemory(byte* pointer, int length)
    {
        _pointer = pointer;
        _length = length;
    }

    public override Span<byte> GetSpan() => new(_pointer, _length);

    public override MemoryHandle Pin(int elementIndex = 0) => new(_pointer + elementIndex);

    public override void Unpin()
    {
    }

    protected override void Dispose(bool disposing)
    {
    }
}
