using HybridKV.Benchmarks.LargerThanMemory;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>Makes a value from a number and reads its counter, for each value size, bound statically.</summary>
public interface IYcsbValues<TValue>
{
    static abstract TValue From(long number);

    static abstract TValue Add(TValue value, long delta);

    static abstract long Counter(TValue value);
}

/// <summary>
/// Makes the value a HybridKV worker upserts, in <paramref name="scratch"/> (a pinned buffer of the run's value size
/// that the worker owns) when the value is a byte sequence that must point somewhere.
/// </summary>
public interface IYcsbValueBuilder<TValue>
{
    static abstract TValue Build(long number, byte[] scratch);
}

/// <summary>8-byte values.</summary>
public readonly struct LongValues : IYcsbValues<long>, IYcsbValueBuilder<long>
{
    public static long Build(long number, byte[] scratch) => number;

    public static long From(long number) => number;

    public static long Add(long value, long delta) => value + delta;

    public static long Counter(long value) => value;
}

/// <summary>100-byte values whose first 8 bytes are a counter.</summary>
public readonly struct Value100s : IYcsbValues<Value100>, IYcsbValueBuilder<Value100>
{
    public static Value100 Build(long number, byte[] scratch) => From(number);

    public static Value100 From(long number) => new() { Counter = number };

    public static Value100 Add(Value100 value, long delta) => new() { Counter = value.Counter + delta };

    public static long Counter(Value100 value) => value.Counter;
}

/// <summary>Byte-sequence values of the scratch buffer's length, whose first 8 bytes are a counter.</summary>
public readonly struct VarBytesValues : IYcsbValueBuilder<VarBytes>
{
    /// <summary>Writes the counter into <paramref name="scratch"/> (allocated pinned) and describes all of it.</summary>
    public static unsafe VarBytes Build(long number, byte[] scratch)
    {
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(scratch, number);
        fixed (byte* start = scratch)
        {
            // The array is allocated pinned, so the pointer stays valid after the fixed block.
            return new VarBytes(start, scratch.Length);
        }
    }
}
