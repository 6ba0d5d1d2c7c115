using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.LargerThanMemory;

/// <summary>Stores whose log is many times their memory budget, and synchronous helpers over pending operations.</summary>
internal static class StoreOnDevice
{
    /// <summary>16 pages of 4 KiB in memory; 64 KiB segment files; no automatic log compaction.</summary>
    public const long MemoryBytes = 1L << 16;
    public const long PageSize = 1L << 12;

    public static StoreSettings Settings(string? directory = null, StorageDevice? device = null) => new()
    {
        IndexBuckets = 1L << 12,
        PageSizeBits = 12,
        MemorySizeBytes = MemoryBytes,
        MutableFraction = 0.5,
        LogDirectory = directory,
        LogDevice = device,
        LogSegmentSizeBits = 16,
        MaxSessions = 16,
        // These stores count device reads, damage segment files and watch the tail: no compaction unless a test asks.
        LogCompactionRatio = 0,
    };

    /// <summary>Settings whose 16-bucket index doubles when asked (<c>GrowIndexAsync</c>), with a MiB of memory.</summary>
    public static StoreSettings GrowableIndexSettings(string directory) => Settings(directory) with
    {
        IndexBuckets = 16,
        IndexGrowthOverflowPercent = 0,
        MemorySizeBytes = 1L << 20,
    };

    public static HybridKVStore<long, long, long, long, CountContext?, CountFunctions> Create(
        StoreSettings settings, HashMode mode = HashMode.Mixed) => TestStores.Create(settings, mode);

    /// <summary>Upserts <paramref name="count"/> keys from <paramref name="first"/> on with value key *
    /// <paramref name="factor"/>: far more than memory.</summary>
    public static void Preload(
        this Session<long, long, long, long, CountContext?, CountFunctions> session, long count = 20_000, long factor = 1,
        long first = 0)
    {
        for (long k = first; k < first + count; k++)
        {
            session.Upsert(k, k * factor);
        }
    }

    /// <summary>Reads a key, completing the read if it went to the device.</summary>
    public static (Status Status, long Value) ReadNow(
        this Session<long, long, long, long, CountContext?, CountFunctions> session, long key)
    {
        var context = new CountContext();
        long output = 0;
        Status status = session.Read(key, 0, ref output, context);
        if (status != Status.Pending)
        {
            return (status, output);
        }

        Assert.True(session.CompletePending(wait: true));
        Assert.Equal(1, context.Completions);
        return (context.LastStatus, context.Output);
    }

    /// <summary>Reads a key as <see cref="ReadNow"/> does, with 0 for the value of a key not found (whatever the
    /// output held), so that results compare as pairs.</summary>
    public static (Status Status, long Value) ReadOrZeroNow(
        this Session<long, long, long, long, CountContext?, CountFunctions> session, long key)
    {
        (Status status, long value) = session.ReadNow(key);
        return (status, status == Status.Ok ? value : 0);
    }

    /// <summary>Runs an RMW, completing it if it went pending; returns its final status.</summary>
    public static Status RMWNow(this Session<long, long, long, long, CountContext?, CountFunctions> session, long key, long delta) =>
        session.RMWNow(key, delta, expiration: null);

    /// <summary>Runs an RMW that gives its value <paramref name="expiration"/> (none: keeps the value's), completing it
    /// if it went pending; returns its final status.</summary>
    public static Status RMWNow(
        this Session<long, long, long, long, CountContext?, CountFunctions> session, long key, long delta,
        Expiration? expiration)
    {
        var context = new CountContext();
        Status status = expiration is { } given ? session.RMW(key, delta, given, context) : session.RMW(key, delta, context);
        if (status != Status.Pending)
        {
            return status;
        }

        Assert.True(session.CompletePending(wait: true));
        Assert.Equal(1, context.Completions);
        return context.LastStatus;
    }

    /// <summary>Deletes a key, completing the delete if it went to the device; returns its final status.</summary>
    public static Status DeleteNow(this Session<long, long, long, long, CountContext?, CountFunctions> session, long key)
    {
        var context = new CountContext();
        Status status = session.Delete(key, context);
        if (status != Status.Pending)
        {
            return status;
        }

        Assert.True(session.CompletePending(wait: true));
        Assert.Equal(1, context.Completions);
        return context.LastStatus;
    }
}
