namespace HybridKV.Benchmarks.LargerThanMemory;

/// <summary>
/// Pre-generated key streams as YCSB draws them: uniform, or zipfian with θ = 0.99 (Gray et al.'s generator) whose
/// ranks are scrambled by a hash, so that the hot keys are spread over the key space rather than being 0, 1, 2…
/// </summary>
public static class KeyStreams
{
    /// <summary>One stream of 2^22 keys per thread, each with its own seed: "uniform" or "zipf".</summary>
    public static long[][] PerThread(string distribution, long keys, int threads) =>
        Enumerable.Range(0, threads)
            .Select(t => distribution == "zipf"
                ? ScrambledZipfian(keys, 1 << 22, seed: t + 1)
                : Uniform(keys, 1 << 22, seed: t + 1))
            .ToArray();

    public static long[] Uniform(long keys, int length, int seed)
    {
        var random = new Random(seed);
        var stream = new long[length];
        for (int i = 0; i < length; i++)
        {
            stream[i] = random.NextInt64(keys);
        }

        return stream;
    }

    public static long[] ScrambledZipfian(long keys, int length, int seed, double theta = 0.99)
    {
        double zetaN = 0;
        for (long i = 1; i <= keys; i++)
        {
            zetaN += 1.0 / Math.Pow(i, theta);
        }

        double zeta2 = 1 + Math.Pow(0.5, theta);
        double alpha = 1.0 / (1.0 - theta);
        double eta = (1 - Math.Pow(2.0 / keys, 1 - theta)) / (1 - zeta2 / zetaN);
        var random = new Random(seed);
        var stream = new long[length];
        for (int i = 0; i < length; i++)
        {
            double u = random.NextDouble();
            double uz = u * zetaN;
            long rank = uz < 1 ? 0
                : uz < zeta2 ? 1
                : (long)(keys * Math.Pow(eta * u - eta + 1, alpha));
            stream[i] = (long)((ulong)KeyHashing.Mix(Math.Min(rank, keys - 1)) % (ulong)keys);
        }

        return stream;
    }
}
