namespace HybridKV.Benchmarks.Callbacks;

/// <summary>
/// The count store's callbacks written by hand as a struct, as a user would without the generator: the reference
/// point for the generated <see cref="CountStore.Counts"/> (same bodies) and the interface-bound variant.
/// </summary>
internal struct CountFunctions : IFunctions<long, long, long, long, Empty>
{
    public readonly long GetHashCode64(in long key) => KeyHashing.Mix(key);

    public readonly bool KeyEquals(in long first, in long second) => first == second;

    public readonly void SingleReader(in long key, in long input, in long value, ref long output) =>
        output = Volatile.Read(in value);

    public readonly void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
        output = Volatile.Read(in value);

    public readonly void SingleWriter(in long key, in long source, ref long destination) =>
        Volatile.Write(ref destination, source);

    public readonly void ConcurrentWriter(in long key, in long source, ref long destination) =>
        Volatile.Write(ref destination, source);

    public readonly void InitialUpdater(in long key, in long input, ref long value) => value = input;

    public readonly void InPlaceUpdater(in long key, in long input, ref long value) => Interlocked.Add(ref value, input);

    public readonly void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
        newValue = oldValue + input;

    public readonly void ReadCompletionCallback(in long key, in long input, in long output, Empty context,
        Status status)
    {
    }

    public readonly void RMWCompletionCallback(in long key, in long input, Empty context, Status status)
    {
    }

    public readonly void DeleteCompletionCallback(in long key, Empty context, Status status)
    {
    }
}
