using System.Diagnostics;
using System.Runtime.InteropServices;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// The physical limit a store's throughput is measured against: random 8-byte loads over a native array as large as
/// the store's working set, on the same number of threads. Independent loads (addresses from the key stream, so the
/// core can keep several misses in flight) bound what any lookup can reach; a dependent chain (each address is the
/// previous load's value) gives the latency of one miss.
/// </summary>
public sealed unsafe class MemoryProbe : IDisposable
{
    // Where the loops' results go, so that the JIT cannot drop the loads.
    private static long s_sink;

    private readonly long* _array;
    private readonly long _count;

    public MemoryProbe(long bytes)
    {
        _count = Math.Max(1024, bytes / sizeof(long));
        _array = (long*)NativeMemory.AlignedAlloc((nuint)(_count * sizeof(long)), 64);

        // Sattolo's algorithm: one cycle through every slot, so a chain never settles into a short loop.
        for (long i = 0; i < _count; i++)
        {
            _array[i] = i;
        }

        var random = new Random(7);
        for (long i = _count - 1; i > 0; i--)
        {
            long j = random.NextInt64(i);
            (_array[i], _array[j]) = (_array[j], _array[i]);
        }
    }

    public long Bytes => _count * sizeof(long);

    /// <summary>Loads per second of <paramref name="threads"/> threads for <paramref name="duration"/>.</summary>
    public (double Independent, double Dependent) Measure(int threads, TimeSpan duration, YcsbStreams[] streams) =>
        (Run(threads, duration, thread => Independent(streams[thread].Keys)),
         Run(threads, duration, thread => Dependent(thread)));

    private static double Run(int threads, TimeSpan duration, Func<int, Func<int, long>> makeLoop)
    {
        long total = 0;
        var clock = Stopwatch.StartNew();
        Parallel.For(0, threads, new ParallelOptions { MaxDegreeOfParallelism = threads }, thread =>
        {
            Func<int, long> loop = makeLoop(thread);
            long done = 0;
            long sink = 0;
            while (clock.Elapsed < duration)
            {
                sink += loop(1 << 16);
                done += 1 << 16;
            }

            Interlocked.Add(ref total, done);
            Interlocked.Add(ref s_sink, sink);
        });
        return total / clock.Elapsed.TotalSeconds;
    }

    private Func<int, long> Independent(long[] keys)
    {
        int position = 0;
        return count =>
        {
            long sum = 0;
            for (int i = 0; i < count; i++)
            {
                ulong slot = (ulong)KeyHashing.Mix(keys[position]) % (ulong)_count;
                sum += _array[slot];
                position = (position + 1) & (keys.Length - 1);
            }

            return sum;
        };
    }

    private Func<int, long> Dependent(int thread)
    {
        long slot = (thread * 7919L) % _count;
        return count =>
        {
            for (int i = 0; i < count; i++)
            {
                slot = _array[slot];
            }

            return slot;
        };
    }

    public void Dispose() => NativeMemory.AlignedFree(_array);
}
