using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace HybridKV;

/// <summary>
/// A variable-length byte sequence: use it as the key or value type of a store to keep keys or values of any length
/// (0 bytes up to what fits in a page) in the log. It is a pointer, a length and, for a value in the log, the room
/// the record has for it; the log itself holds the bytes with their length, never this struct.
/// </summary>
/// <remarks>
/// <para>A <see cref="VarBytes"/> that a callback receives points into the log or at the caller's memory and is valid
/// only during that call: copy the bytes to keep them.</para>
/// <para>A callback that receives a value by <see langword="ref"/> may write its bytes (<see cref="AsSpan"/>) and set
/// <see cref="Length"/> to anything up to <see cref="Capacity"/>: a value that shrinks keeps its record's room and can
/// grow back in place later.</para>
/// <para>Most callers never build one: the extension methods of <see cref="VarBytesSessionExtensions"/> take spans,
/// memory and strings and pin them for the duration of the call.</para>
/// </remarks>
[SuppressMessage("Performance", "CA1815:Override equals and operator equals on value types",
    Justification = "A view of memory: equality would have to choose between identity and content; compare spans.")]
public unsafe struct VarBytes
{
    private readonly byte* _pointer;
    private readonly int _capacity;
    private int _length;

    /// <summary>Describes <paramref name="length"/> bytes starting at <paramref name="first"/>.</summary>
    /// <param name="first">The first byte. The memory must stay valid and unmoved (pinned) until the operation that
    /// receives this value has completed, including when it completes later, in <c>CompletePending</c> or an
    /// awaited method.</param>
    /// <param name="length">The number of bytes, 0 or more.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="length"/> is negative.</exception>
    /// <exception cref="ArgumentNullException"><paramref name="first"/> is null while <paramref name="length"/> is
    /// not 0.</exception>
    public VarBytes(byte* first, int length)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        if (first == null && length != 0)
        {
            throw new ArgumentNullException(nameof(first), "A non-empty byte sequence needs memory to point at.");
        }

        _pointer = first;
        _length = length;
        _capacity = length;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal VarBytes(byte* pointer, int length, int capacity)
    {
        _pointer = pointer;
        _length = length;
        _capacity = capacity;
    }

    /// <summary>The number of bytes.</summary>
    /// <exception cref="ArgumentOutOfRangeException">Set to less than 0 or more than <see cref="Capacity"/>.</exception>
    public int Length
    {
        readonly get => _length;
        set
        {
            if ((uint)value > (uint)_capacity)
            {
                ThrowLengthOutOfRange(value, _capacity);
            }

            _length = value;
        }
    }

    /// <summary>
    /// The most bytes this value can hold where it is: for a value in the log, the room its record was allocated
    /// with; otherwise <see cref="Length"/>.
    /// </summary>
    public readonly int Capacity => _capacity;

    /// <summary>Whether there are no bytes.</summary>
    public readonly bool IsEmpty => _length == 0;

    /// <summary>The bytes, for reading.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public readonly ReadOnlySpan<byte> AsReadOnlySpan() => new(_pointer, _length);

    /// <summary>The bytes, for writing: meant for a destination value a callback fills.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public readonly Span<byte> AsSpan() => new(_pointer, _length);

    /// <summary>A copy of the bytes.</summary>
    public readonly byte[] ToArray() => AsReadOnlySpan().ToArray();

    /// <summary>The <paramref name="length"/> bytes a pinned memory handle points at.</summary>
    internal static VarBytes Pinned(in System.Buffers.MemoryHandle handle, int length) =>
        new((byte*)handle.Pointer, length, length);

    /// <summary>
    /// Copies the bytes <paramref name="bytes"/> describes into a new pinned array and points it there; the caller
    /// keeps the array referenced as long as the copy is used.
    /// </summary>
    internal static byte[] CopyToPinned(ref VarBytes bytes)
    {
        byte[] copy = GC.AllocateUninitializedArray<byte>(bytes._length, pinned: true);
        bytes.AsReadOnlySpan().CopyTo(copy);
        fixed (byte* pointer = copy)
        {
            // The array is pinned for its lifetime, so the address stays valid after the fixed block.
            bytes = new VarBytes(pointer, bytes._length, bytes._length);
        }

        return copy;
    }

    [DoesNotReturn]
    private static void ThrowLengthOutOfRange(int value, int capacity) =>
        throw new ArgumentOutOfRangeException(
            nameof(value), value, $"{nameof(Length)} must be from 0 to the value's {nameof(Capacity)}, {capacity} bytes.");
}
