namespace HybridKV.Benchmarks.Ycsb;

/// <summary>Splits a load of keys 0 to N - 1 over threads, reporting progress as keys are inserted.</summary>
public static class YcsbLoad
{
    private const long ProgressEvery = 1 << 20;

    public static void Split(long keys, int threads, Action<long> progress, Action<long, long> loadRange)
    {
        long share = (keys + threads - 1) / threads;
        long loaded = 0;
        Parallel.For(0, threads, new ParallelOptions { MaxDegreeOfParallelism = threads }, thread =>
        {
            long first = thread * share;
            long end = Math.Min(keys, first + share);
            for (long chunk = first; chunk < end; chunk += ProgressEvery)
            {
                long chunkEnd = Math.Min(end, chunk + ProgressEvery);
                loadRange(chunk, chunkEnd);
                progress(Interlocked.Add(ref loaded, chunkEnd - chunk));
            }
        });
    }
}
