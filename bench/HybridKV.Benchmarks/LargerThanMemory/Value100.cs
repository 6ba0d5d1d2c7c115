using System.Runtime.InteropServices;

namespace HybridKV.Benchmarks.LargerThanMemory;

/// <summary>A 100-byte value whose first 8 bytes are a counter.</summary>
[StructLayout(LayoutKind.Sequential, Size = 100)]
public struct Value100
{
    public long Counter;
}

/// <summary>Long keys, 100-byte values; reads return the counter, RMW adds to it.</summary>
public struct Value100Functions : IFunctions<long, Value100, long, long, byte>
{
    public readonly long GetHashCode64(in long key) => KeyHashing.Mix(key);

    public readonly bool KeyEquals(in long first, in long second) => first == second;

    public readonly void SingleReader(in long key, in long input, in Value100 value, ref long output) =>
        output = value.Counter;

    public readonly void ConcurrentReader(in long key, in long input, in Value100 value, ref long output) =>
        output = Volatile.Read(in value.Counter);

    public readonly void SingleWriter(in long key, in Value100 source, ref Value100 destination) =>
        destination = source;

    // A 100-byte copy is not atomic; readers may see a torn value, which this benchmark does not inspect.
    public readonly void ConcurrentWriter(in long key, in Value100 source, ref Value100 destination) =>
        destination = source;

    public readonly void InitialUpdater(in long key, in long input, ref Value100 value) =>
        value = new Value100 { Counter = input };

    public readonly void InPlaceUpdater(in long key, in long input, ref Value100 value) =>
        Interlocked.Add(ref value.Counter, input);

    public readonly void CopyUpdater(in long key, in long input, in Value100 oldValue, ref Value100 newValue)
    {
        newValue = oldValue;
        newValue.Counter += input;
    }

    public readonly void ReadCompletionCallback(in long key, in long input, in long output, byte context, Status status)
    {
    }

    public readonly void RMWCompletionCallback(in long key, in long input, byte context, Status status)
    {
    }

    public readonly void DeleteCompletionCallback(in long key, byte context, Status status)
    {
    }
}
