using HybridKV.Benchmarks.LargerThanMemory;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// One thread's pre-generated transactions: keys from the distribution and operations from the mix, drawn before
/// the clock starts so that generating them costs the measured loop nothing. Threads wrap around their stream.
/// </summary>
public sealed class YcsbStreams
{
    // 32M operations (288 MiB a thread): long enough that a larger-than-memory run does not come back to the keys it just
    // read into memory. With 4M, a zipf RMW store of 2M keys and 64 MiB settled either where one pass through the stream
    // took less time than the log takes to turn its memory over (every pass found the last one's copies in memory: 1.3M
    // ops/s) or more (0.6M), run after run (issue 26).
    public const int Length = 1 << 25;

    private YcsbStreams(long[] keys, YcsbOperation[] operations)
    {
        Keys = keys;
        Operations = operations;
    }

    public long[] Keys { get; }

    public YcsbOperation[] Operations { get; }

    /// <summary>One stream per thread, each with its own seed; zipfian ranks are scrambled (see <see cref="KeyStreams"/>).</summary>
    public static YcsbStreams[] PerThread(string distribution, long keys, YcsbMix mix, int threads, int length = Length)
    {
        return [.. Enumerable.Range(0, threads).Select(thread =>
        {
            long[] keyStream = distribution == "zipf"
                ? KeyStreams.ScrambledZipfian(keys, length, seed: thread + 1)
                : KeyStreams.Uniform(keys, length, seed: thread + 1);
            var random = new Random(1000 + thread);
            var operations = new YcsbOperation[length];
            for (int i = 0; i < length; i++)
            {
                operations[i] = mix.Pick(random.Next(100));
            }

            return new YcsbStreams(keyStream, operations);
        })];
    }
}
