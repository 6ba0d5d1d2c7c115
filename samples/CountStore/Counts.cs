using HybridKV;

namespace CountStore;

/// <summary>
/// The count store of the FASTER paper (§2.5): the key is what is counted, the value its count, and an RMW adds the
/// input. The generator turns this class into <see cref="Counts.Store"/> and <see cref="Counts.Session"/>.
/// </summary>
/// <remarks>
/// Only the callbacks that differ from the defaults are written. Several sessions update the same counters in place,
/// so the concurrent ones use atomic instructions; the rest (SingleReader = ConcurrentReader, SingleWriter =
/// ConcurrentWriter, InitialUpdater = InPlaceUpdater on a zero count, hashing of the long key) are generated.
/// </remarks>
[GeneratedStore(Key = typeof(long), Value = typeof(long))]
internal static partial class Counts
{
    private static void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
        output = Volatile.Read(in value);

    private static void ConcurrentWriter(in long key, in long source, ref long destination) =>
        Volatile.Write(ref destination, source);

    private static void InPlaceUpdater(in long key, in long input, ref long value) => Interlocked.Add(ref value, input);

    // A read-only record is copied to the tail: nobody else writes the copy yet, so no atomic add is needed.
    private static void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
        newValue = oldValue + input;
}
