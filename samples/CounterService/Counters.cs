using HybridKV;

namespace CounterService;

/// <summary>Counters: the key is the counter's id, the value its count, and an RMW adds the input.</summary>
[GeneratedStore(Key = typeof(long), Value = typeof(long))]
public static partial class Counters
{
    private static void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
        output = Volatile.Read(in value);

    private static void ConcurrentWriter(in long key, in long source, ref long destination) =>
        Volatile.Write(ref destination, source);

    private static void InPlaceUpdater(in long key, in long input, ref long value) => Interlocked.Add(ref value, input);

    private static void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
        newValue = oldValue + input;
}
