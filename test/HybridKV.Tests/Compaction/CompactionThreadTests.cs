using System.Collections.Concurrent;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;

namespace HybridKV.Tests.Compaction;

/// <summary>
/// A compaction goes on on its own thread after each of its device reads (<see cref="Utilities.ContinuationThread"/>),
/// not on the thread pool, whose workers spin after every continuation; whoever awaits it goes on elsewhere.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class CompactionThreadTests
{
    private const string CompactionThread = "HybridKV compaction";
    private const int Keys = 4_000;

    [Fact]
    public async Task A_compaction_examines_records_on_its_own_thread_and_its_caller_goes_on_elsewhere()
    {
        // Reads complete a millisecond later, on a timer's thread: every page the compactor examines waited for one.
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 22)) { Latency = TimeSpan.FromMilliseconds(1) };
        StoreSettings settings = StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0 };
        using var store = new HybridKVStore<long, long, long, long, Empty, ThreadNotingFunctions>(settings);
        using var session = store.NewSession();
        for (long round = 1; round <= 4; round++)
        {
            for (long key = 0; key < Keys; key++)
            {
                session.Upsert(key, key * round);
            }
        }

        session.CompletePending(wait: true);
        long until = store.HeadAddress;

        ThreadNotingFunctions.Start();
        // Awaited on the thread pool, with no synchronization context to go back to: the compaction's continuation
        // runs where the compaction completes it.
        (CompactionResult result, string? awaitedOn) = await Task.Run(async () =>
        {
            CompactionResult compacted = await store.CompactAsync(until);
            return (compacted, Thread.CurrentThread.Name);
        });
        string?[] hashedOn = ThreadNotingFunctions.Stop();

        Assert.NotEqual(CompactionThread, awaitedOn);
        Assert.True(result.RecordsExamined > 0, "the range held records");
        // The compactor hashes each record's key as it examines it.
        Assert.True(hashedOn.Length >= result.RecordsExamined, $"{hashedOn.Length} keys hashed");
        // Until its first read that had to wait, the compaction runs on its caller's thread; from then on, only on
        // its own.
        int firstOnThread = Array.IndexOf(hashedOn, CompactionThread);
        Assert.True(firstOnThread >= 0, "the compaction went on on its own thread");
        Assert.All(hashedOn[firstOnThread..], name => Assert.Equal(CompactionThread, name));
        device.Latency = TimeSpan.Zero;
        for (long key = 0; key < Keys; key++)
        {
            Assert.Equal(key * 4, (await session.ReadAsync(key)).Output);
        }
    }

    /// <summary>A compaction's reads complete where the device learns of them, and still take its cancellation: one
    /// waiting for a read the device holds ends when cancelled, and so does the store.</summary>
    [Fact]
    public async Task A_compaction_waiting_for_a_device_read_ends_when_cancelled()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 22));
        StoreSettings settings = StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0 };
        using var store = new HybridKVStore<long, long, long, long, Empty, ThreadNotingFunctions>(settings);
        using (var session = store.NewSession())
        {
            for (long key = 0; key < 2 * Keys; key++)
            {
                session.Upsert(key, key);
            }

            session.CompletePending(wait: true);
        }

        var never = new TaskCompletionSource();
        device.HoldReads = never.Task;
        long readsBefore = device.ReadCount;
        using var cancel = new CancellationTokenSource();
        Task<CompactionResult> compaction = store.CompactAsync(store.HeadAddress, cancel.Token);
        Assert.True(SpinWait.SpinUntil(() => device.ReadCount > readsBefore, TimeSpan.FromSeconds(30)),
            "the compaction reads the device");

        try
        {
            cancel.Cancel();

            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => compaction.WaitAsync(TimeSpan.FromSeconds(30)));
        }
        finally
        {
            // Whatever the outcome, the store can be disposed.
            device.HoldReads = null;
            never.TrySetResult();
        }
    }

    /// <summary>Long keys and values; hashing notes the thread it ran on while asked to.</summary>
    private readonly struct ThreadNotingFunctions : IFunctions<long, long, long, long, Empty>
    {
        private static ConcurrentQueue<string?>? s_noted;

        public static void Start() => s_noted = new ConcurrentQueue<string?>();

        public static string?[] Stop()
        {
            string?[] noted = [.. s_noted!];
            s_noted = null;
            return noted;
        }

        public long GetHashCode64(in long key)
        {
            s_noted?.Enqueue(Thread.CurrentThread.Name);
            return KeyHashing.HashBytes(in key);
        }

        public bool KeyEquals(in long first, in long second) => first == second;

        public void SingleReader(in long key, in long input, in long value, ref long output) => output = value;

        public void ConcurrentReader(in long key, in long input, in long value, ref long output) => output = value;

        public void SingleWriter(in long key, in long source, ref long destination) => destination = source;

        public void ConcurrentWriter(in long key, in long source, ref long destination) => destination = source;

        public void InitialUpdater(in long key, in long input, ref long value) => value = input;

        public void InPlaceUpdater(in long key, in long input, ref long value) => value += input;

        public void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
            newValue = oldValue + input;

        public void ReadCompletionCallback(in long key, in long input, in long output, Empty context, Status status)
        {
        }

        public void RMWCompletionCallback(in long key, in long input, Empty context, Status status)
        {
        }

        public void DeleteCompletionCallback(in long key, Empty context, Status status)
        {
        }
    }
}
