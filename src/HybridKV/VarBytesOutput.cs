using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using HybridKV.Utilities;

namespace HybridKV;

/// <summary>
/// Where a read of a <see cref="VarBytes"/> value puts the bytes: into a buffer the caller provides, or (the default)
/// into pooled memory the caller disposes. Readers fill it with <see cref="SetValue"/>.
/// </summary>
/// <remarks>
/// An output with a caller's buffer holds a pointer to it, so it must not outlive the buffer: the extension methods of
/// <see cref="VarBytesSessionExtensions"/> that take a <see cref="Span{T}"/> wait for the device inside the call for
/// that reason.
/// </remarks>
[SuppressMessage("Performance", "CA1815:Override equals and operator equals on value types",
    Justification = "An out parameter holder, never compared.")]
public unsafe struct VarBytesOutput
{
    private readonly byte* _destination;
    private readonly int _destinationLength;
    private readonly bool _toDestination;

    private VarBytesOutput(byte* destination, int destinationLength)
    {
        _destination = destination;
        _destinationLength = destinationLength;
        _toDestination = true;
    }

    /// <summary>The value's length in bytes, whether or not it was copied (0 until a reader sets a value).</summary>
    public int Length { get; private set; }

    /// <summary>
    /// The value in pooled memory, exactly <see cref="Length"/> bytes, for an output without a caller's buffer; the
    /// caller disposes it (which returns it to the pool).
    /// </summary>
    public IMemoryOwner<byte>? Memory { get; private set; }

    /// <summary>Whether the value was copied into the caller's buffer (false if it did not fit).</summary>
    public bool CopiedToDestination { get; private set; }

    /// <summary>
    /// An output that copies into <paramref name="length"/> bytes at <paramref name="destination"/>, which must stay
    /// valid and pinned until the read (including a pending one) has completed.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="length"/> is negative.</exception>
    public static VarBytesOutput ToBuffer(byte* destination, int length)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        return new VarBytesOutput(destination, length);
    }

    /// <summary>Sets the value read: copies it into the caller's buffer if it fits there, or into pooled memory.</summary>
    /// <param name="value">The bytes.</param>
    public void SetValue(ReadOnlySpan<byte> value)
    {
        Length = value.Length;
        if (_toDestination)
        {
            CopiedToDestination = value.Length <= _destinationLength;
            if (CopiedToDestination)
            {
                value.CopyTo(new Span<byte>(_destination, _destinationLength));
            }

            return;
        }

        Memory?.Dispose();
        Memory = PooledBytes.CopyOf(value);
    }
}
