using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace HybridKV;

/// <summary>Hashing and equality helpers for implementing <see cref="IKeyComparer{TKey}"/> over unmanaged keys.</summary>
public static class KeyHashing
{
    /// <summary>Mixes a 64-bit value so that every output bit depends on every input bit (a SplitMix64 finalizer).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Mix(long value)
    {
        ulong z = (ulong)value;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return (long)(z ^ (z >> 31));
    }

    /// <summary>A well-mixed hash of an unmanaged value's bytes, 8 at a time.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long HashBytes<T>(in T value)
        where T : unmanaged
    {
        if (Unsafe.SizeOf<T>() == sizeof(long))
        {
            return Mix(Unsafe.As<T, long>(ref Unsafe.AsRef(in value)));
        }

        if (Unsafe.SizeOf<T>() == sizeof(int))
        {
            return Mix(Unsafe.As<T, int>(ref Unsafe.AsRef(in value)));
        }

        return HashSpan(MemoryMarshal.AsBytes(new ReadOnlySpan<T>(in value)));
    }

    /// <summary>Whether two unmanaged values have the same bytes.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool BytesEqual<T>(in T first, in T second)
        where T : unmanaged
    {
        if (Unsafe.SizeOf<T>() == sizeof(long))
        {
            return Unsafe.As<T, long>(ref Unsafe.AsRef(in first)) == Unsafe.As<T, long>(ref Unsafe.AsRef(in second));
        }

        return MemoryMarshal.AsBytes(new ReadOnlySpan<T>(in first))
            .SequenceEqual(MemoryMarshal.AsBytes(new ReadOnlySpan<T>(in second)));
    }

    /// <summary>A well-mixed hash of a byte sequence.</summary>
    public static long HashSpan(ReadOnlySpan<byte> bytes)
    {
        long hash = Mix(bytes.Length);
        while (bytes.Length >= sizeof(long))
        {
            hash = Mix(hash ^ MemoryMarshal.Read<long>(bytes));
            bytes = bytes[sizeof(long)..];
        }

        if (!bytes.IsEmpty)
        {
            Span<byte> tail = stackalloc byte[sizeof(long)];
            tail.Clear();
            bytes.CopyTo(tail);
            hash = Mix(hash ^ MemoryMarshal.Read<long>(tail) ^ ((long)bytes.Length << 56));
        }

        return hash;
    }
}
