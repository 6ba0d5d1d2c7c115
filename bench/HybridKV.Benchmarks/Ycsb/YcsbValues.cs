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
