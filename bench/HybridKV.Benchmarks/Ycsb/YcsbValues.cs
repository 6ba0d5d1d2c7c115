using HybridKV.Benchmarks.LargerThanMemory;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>Makes a value from a number and reads its counter, for each value size, bound statically.</summary>
public interface IYcsbValues<TValue>
{
    static abstract TValue From(long number);

    static abstract TValue Add(TValue value, long delta);

    static abstract long Counter(TValue value);
}

/// <summary>8-byte values.</summary>
public readonly struct LongValues : IYcsbValues<long>
{
    public static long From(long number) => number;

    public static long Add(long value, long delta) => value + delta;

    public static long Counter(long value) => value;
}

/// <summary>100-byte values whose first 8 bytes are a counter.</summary>
public readonly struct Value100s : IYcsbValues<Value100>
{
    public static Value100 From(long number) => new() { Counter = number };

    public static Value100 Add(Value100 value, long delta) => new() { Counter = value.Counter + delta };

    public static long Counter(Value100 value) => value.Counter;
}

/// <summary>Byte-sequence values, built by <see cref="Fill"/> in a caller's pinned buffer: the first 8 bytes are a counter.</summary>
public readonly struct VarBytesValues : IYcsbValues<VarBytes>
{
    public static VarBytes From(long number) =>
        throw new NotSupportedException("A byte-sequence value needs a buffer to live in: use Fill.");

    public static VarBytes Add(VarBytes value, long delta) =>
        throw new NotSupportedException("Byte-sequence values are updated in the log, by the store's callbacks.");

    public static long Counter(VarBytes value) => System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(value.AsReadOnlySpan());

    /// <summary>Writes the counter into <paramref name="pinned"/> and describes its first <paramref name="length"/> bytes.</summary>
    public static unsafe VarBytes Fill(byte[] pinned, int length, long number)
    {
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(pinned, number);
        fixed (byte* start = pinned)
        {
            // The array is allocated pinned, so the pointer stays valid after the fixed block.
            return new VarBytes(start, length);
        }
    }
}
