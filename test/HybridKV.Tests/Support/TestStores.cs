using HybridKV.Sessions;

namespace HybridKV.Tests.Support;

/// <summary>Shorthands for the count store used throughout the tests.</summary>
public static class TestStores
{
    public static HybridKVStore<long, long, long, long, CountContext?, CountFunctions> Create(
        StoreSettings settings, HashMode mode = HashMode.Mixed) => new(settings, new CountFunctions(mode));

    /// <summary>Small pages and memory, so that page turns and region shifts happen often.</summary>
    public static StoreSettings Small(long memoryBytes = 1L << 20, int pageSizeBits = 12, double mutableFraction = 0.5,
        long indexBuckets = 1L << 10) => new()
    {
        IndexBuckets = indexBuckets,
        PageSizeBits = pageSizeBits,
        MemorySizeBytes = memoryBytes,
        MutableFraction = mutableFraction,
        MaxSessions = 16,
    };

    public static long ReadValue(
        this Session<long, long, long, long, CountContext?, CountFunctions> session, long key, out Status status)
    {
        long output = 0;
        status = session.Read(in key, ref output);
        return output;
    }
}
