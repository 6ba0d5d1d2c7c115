using HybridKV.Benchmarks.LargerThanMemory;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// The YCSB store of 100-byte values, generated: reads return the counter in the first 8 bytes, RMW adds to it.
/// A concurrent upsert copies 100 bytes without a lock (readers may see a torn value, as in FASTER's benchmark).
/// </summary>
[GeneratedStore(Key = typeof(long), Value = typeof(Value100), Input = typeof(long), Output = typeof(long))]
public static partial class YcsbValue100s
{
    private static void SingleReader(in long key, in long input, in Value100 value, ref long output) =>
        output = value.Counter;

    private static void ConcurrentReader(in long key, in long input, in Value100 value, ref long output) =>
        output = Volatile.Read(in value.Counter);

    private static void InPlaceUpdater(in long key, in long input, ref Value100 value) =>
        Interlocked.Add(ref value.Counter, input);

    private static void CopyUpdater(in long key, in long input, in Value100 oldValue, ref Value100 newValue)
    {
        newValue = oldValue;
        newValue.Counter += input;
    }
}
