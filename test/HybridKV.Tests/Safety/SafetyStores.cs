using System.Security.Cryptography;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Safety;

/// <summary>Stores and checks shared by the safety tests: real files in a directory, compared before and after.</summary>
internal static class SafetyStores
{
    /// <summary>Every file under <paramref name="directory"/> with its length and content hash, except the lock files
    /// (a store that takes the lock and then refuses rewrites who holds it).</summary>
    public static SortedDictionary<string, string> Snapshot(string directory)
    {
        var files = new SortedDictionary<string, string>(StringComparer.Ordinal);
        foreach (string file in Directory.GetFiles(directory, "*", SearchOption.AllDirectories))
        {
            if (Path.GetFileName(file).StartsWith("LOCK", StringComparison.Ordinal))
            {
                continue;
            }

            byte[] bytes = File.ReadAllBytes(file);
            files[Path.GetRelativePath(directory, file)] = $"{bytes.Length}:{Convert.ToHexString(SHA256.HashData(bytes))}";
        }

        return files;
    }

    /// <summary>The log's segment numbers under a store directory.</summary>
    public static long[] SegmentFiles(string storeDirectory) => LogFiles.SegmentNumbers(Path.Combine(storeDirectory, "log"));

    /// <summary>A count store in <paramref name="directory"/> holding keys 0..count-1 = key * 10, checkpointed.</summary>
    public static async Task WriteCheckpointedAsync(StoreSettings settings, long count = 3000, HashMode mode = HashMode.Mixed)
    {
        using var store = TestStores.Create(settings, mode);
        using (var session = store.NewSession())
        {
            for (long key = 0; key < count; key++)
            {
                session.Upsert(key, key * 10);
            }
        }

        await store.TakeCheckpointAsync();
    }

    /// <summary>Asserts that keys 0..count-1 hold key * 10.</summary>
    public static void AssertHoldsCheckpointed(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, long count = 3000)
    {
        using var session = store.NewSession();
        for (long key = 0; key < count; key++)
        {
            Assert.Equal((Status.Ok, key * 10), LargerThanMemory.StoreOnDevice.ReadNow(session, key));
        }
    }
}

/// <summary>Long keys and double values: the same record size as the count store, other types.</summary>
internal struct DoubleFunctions : IFunctions<long, double, double, double, Empty>
{
    public readonly long GetHashCode64(in long key) => KeyHashing.HashBytes(in key);

    public readonly bool KeyEquals(in long first, in long second) => first == second;

    public readonly void SingleReader(in long key, in double input, in double value, ref double output) => output = value;

    public readonly void ConcurrentReader(in long key, in double input, in double value, ref double output) =>
        output = value;

    public readonly void SingleWriter(in long key, in double source, ref double destination) => destination = source;

    public readonly void ConcurrentWriter(in long key, in double source, ref double destination) => destination = source;

    public readonly void InitialUpdater(in long key, in double input, ref double value) => value = input;

    public readonly void InPlaceUpdater(in long key, in double input, ref double value) => value += input;

    public readonly void CopyUpdater(in long key, in double input, in double oldValue, ref double newValue) =>
        newValue = oldValue + input;

    public readonly void ReadCompletionCallback(in long key, in double input, in double output, Empty context, Status status)
    {
    }

    public readonly void RMWCompletionCallback(in long key, in double input, Empty context, Status status)
    {
    }

    public readonly void DeleteCompletionCallback(in long key, Empty context, Status status)
    {
    }
}
