using System.Diagnostics;
using System.Globalization;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// The YCSB harness (FASTER §7, CPR §7): preload N keys, then T threads each run their pre-generated stream of
/// transactions for S seconds, K times; the stores run one after another on the same streams in this process,
/// beside a probe of what the memory system allows. Threads complete pending operations every
/// <see cref="Batch"/> operations, as the papers' benchmark does.
/// </summary>
public static class YcsbRunner
{
    public const int Batch = 256;

    /// <summary>
    /// Past this many operations in flight a worker waits for them, as a service bounds its outstanding requests
    /// (reads queue far faster than a device serves them; unbounded, their buffers grow until the process runs out of
    /// memory). With the batch it issues before it looks, a worker has at most as many pending as a HybridKV session
    /// keeps for reuse: at 4,096 plus a batch, the last batch's operations were made afresh every time (5 B an
    /// operation on uniform RMW). Every store's worker waits at the same bound, so all keep as many reads in flight.
    /// </summary>
    public const int MaxPending = HybridKV.Sessions.Session<long, long, long, long, Empty, Callbacks.CountFunctions>.MaxSpare - Batch;

    internal const int WarmupSeconds = 2;

    // Where the workers' read checksums go, so that the JIT cannot drop the reads.
    private static long s_checksums;

    private static readonly TimeSpan ProbeDuration = TimeSpan.FromSeconds(2);

    public static int Run(string[] args)
    {
        if (args.Contains("--help"))
        {
            Console.WriteLine(YcsbOptions.Usage);
            return 0;
        }

        YcsbOptions options;
        try
        {
            options = YcsbOptions.Parse(args);
        }
        catch (ArgumentException error)
        {
            Console.Error.WriteLine(error.Message);
            Console.Error.WriteLine(YcsbOptions.Usage);
            return 2;
        }

        Console.WriteLine($"YCSB: keys={options.Keys:N0} index-buckets={options.EffectiveIndexBuckets:N0} " +
            $"seconds={options.Seconds} iterations={options.Iterations} memory-mb={options.MemoryMb?.ToString(CultureInfo.InvariantCulture) ?? "all"} " +
            $"checkpoint-every={options.CheckpointEverySeconds?.ToString(CultureInfo.InvariantCulture) ?? "none"} " +
            $"({options.CheckpointMode?.ToString() ?? "default mode"}) cores={Environment.ProcessorCount}" +
            (options.Scenario is { } scenario ? $" scenario={scenario}" : "") +
            (options.Prefetch > 1 ? $" hybridkv-prefetch={options.Prefetch}" : "") +
            (options.ReadBatch > 1 ? $" hybridkv-read-batch={options.ReadBatch}" : "") +
            (options.Stores.Any(s => s is "faster" or "rocksdb") ? $" peer-page-cache={(options.PeerPageCache ? "on" : "off")}" : ""));

        var results = new List<YcsbResult>();
        var probes = new List<ProbeResult>();
        int maxThreads = options.Threads.Max();
        foreach (string distribution in options.Distributions)
        {
            foreach (YcsbMix mix in options.Mixes)
            {
                Console.WriteLine($"generating {maxThreads} stream(s) of {YcsbStreams.Length:N0} operations: {mix} {distribution}");
                YcsbStreams[] streams = YcsbStreams.PerThread(distribution, options.Keys, mix, maxThreads);
                foreach (int valueBytes in options.ValueBytes)
                {
                    foreach (int threads in options.Threads)
                    {
                        if (!probes.Any(p => p.Distribution == distribution && p.ValueBytes == valueBytes && p.Threads == threads))
                        {
                            probes.Add(Probe(options, distribution, valueBytes, threads, streams));
                        }

                        if (options.Scenario == "soak")
                        {
                            (YcsbResult without, YcsbResult with) = RunSoak(options, mix, distribution, valueBytes,
                                threads, streams);
                            results.Add(without);
                            results.Add(with);
                            continue;
                        }

                        if (options.Scenario == "checkpoint-soak")
                        {
                            // Each store without and with periodic checkpoints, the two open side by side and their
                            // iterations alternated (issues 19 and 26): one after the other, the same build's ratio
                            // ran from 0.60 to 1.11 on this machine as its speed drifted between the two runs.
                            foreach (string store in options.Stores)
                            {
                                results.AddRange(RunStoresSideBySide(
                                    [(options with { CheckpointEverySeconds = null }, store), (options, store)],
                                    mix, distribution, valueBytes, threads, streams));
                            }

                            continue;
                        }

                        results.AddRange(RunStoresSideBySide([.. options.Stores.Select(store => (options, store))],
                            mix, distribution, valueBytes, threads, streams));
                    }
                }
            }
        }

        YcsbReport.Write(options, results, probes);
        return 0;
    }

    private static ProbeResult Probe(YcsbOptions options, string distribution, int valueBytes, int threads,
        YcsbStreams[] streams)
    {
        long bytes = HybridKvYcsbStore.WorkingSetBytes(options.Keys, valueBytes, options.EffectiveIndexBuckets);
        using var probe = new MemoryProbe(bytes);
        (double independent, double dependent) = probe.Measure(threads, ProbeDuration, streams);
        Console.WriteLine($"probe {distribution}/{valueBytes} threads={threads}: {probe.Bytes / (1 << 20):N0} MiB array, " +
            $"{independent / 1e6:F1} M independent loads/s, {dependent / 1e6:F1} M dependent loads/s");
        return new ProbeResult(distribution, valueBytes, threads, probe.Bytes, independent, dependent);
    }

    /// <summary>
    /// Every store of the run open at once, their iterations alternated store by store, so that a machine whose speed
    /// drifts within minutes (this one's: 2x between runs a few seconds apart) slows every store alike, and the ratios
    /// between them compare iterations measured side by side rather than one store's minute with another's.
    /// </summary>
    private static List<YcsbResult> RunStoresSideBySide(IReadOnlyList<(YcsbOptions Options, string Store)> stores,
        YcsbMix mix, string distribution, int valueBytes, int threads, YcsbStreams[] streams)
    {
        var runs = new List<YcsbStoreRun>();
        try
        {
            foreach ((YcsbOptions options, string store) in stores)
            {
                runs.Add(new YcsbStoreRun(options, store, mix, distribution, valueBytes, threads, streams, compaction: null));
            }

            // Each store's background work (RocksDB's compactions after its load and its writes, HybridKV's log
            // compaction) ends before another store is measured: it landed on whichever store ran next (HybridKV's
            // first seconds after RocksDB's load ran at a tenth of its rate). Nobody is charged for it.
            foreach (YcsbStoreRun run in runs)
            {
                run.Settle();
            }

            foreach (YcsbStoreRun run in runs)
            {
                run.WarmUp();
                run.Settle();
            }

            for (int iteration = 1; iteration <= stores[0].Options.Iterations; iteration++)
            {
                // In turn first, so that no store always runs right after another.
                foreach (YcsbStoreRun run in iteration % 2 == 1 ? runs : Enumerable.Reverse(runs))
                {
                    run.Iterate(iteration);
                    run.Settle();
                }
            }

            return [.. runs.Select(run => run.Finish())];
        }
        finally
        {
            foreach (YcsbStoreRun run in runs)
            {
                run.Dispose();
            }
        }
    }

    /// <summary>
    /// The soak (issue 18): the same fixed key set on two stores open side by side, without and with log compaction,
    /// each iteration measured in slices of about <see cref="SoakSliceSeconds"/> alternated between them, each first in
    /// turn (the store with compaction settled after each of its slices: its compactions run until none is due, that
    /// wait counted as its time), so that a machine whose speed drifts over seconds slows both alike rather than
    /// whichever ran then.
    /// </summary>
    /// <remarks>
    /// Alternated by whole iterations of 15 s, the store without compaction alone ran at 4.8-6.9M upserts/s from one
    /// iteration to the next and from 3.6 to 7.3M from one second to the next (2026-11-27), so the ratio of two
    /// iterations measured the machine as much as the compaction.
    /// </remarks>
    private static (YcsbResult Without, YcsbResult With) RunSoak(YcsbOptions options, YcsbMix mix, string distribution,
        int valueBytes, int threads, YcsbStreams[] streams)
    {
        using var without = new YcsbStoreRun(options, "hybridkv", mix, distribution, valueBytes, threads, streams,
            compaction: false);
        using var with = new YcsbStoreRun(options, "hybridkv", mix, distribution, valueBytes, threads, streams,
            compaction: true);
        without.WarmUp();
        with.WarmUp();
        with.Settle();
        int slices = Math.Max(1, options.Seconds / SoakSliceSeconds);
        for (int iteration = 1; iteration <= options.Iterations; iteration++)
        {
            without.StartIteration();
            with.StartIteration();
            for (int slice = 0; slice < slices; slice++)
            {
                int seconds = (options.Seconds / slices) + (slice < options.Seconds % slices ? 1 : 0);
                // In turn first, so that neither always runs just after the other's slice.
                YcsbStoreRun[] order = slice % 2 == 0 ? [without, with] : [with, without];
                foreach (YcsbStoreRun run in order)
                {
                    // Each store's disk is sampled only while it runs (its files do not change meanwhile): listing the
                    // other's files every 100 ms took processor time from the store being measured, the store with
                    // compaction the most.
                    (run == with ? without : with).SampleDisk(running: false);
                    run.SampleDisk(running: true);
                    run.MeasureSlice(iteration, seconds, settle: run == with);
                }
            }

            without.EndIteration(iteration);
            with.EndIteration(iteration);
        }

        without.SampleDisk(running: false);
        with.SampleDisk(running: false);

        return (without.Finish(), with.Finish());
    }

    /// <summary>How long, about, the soak runs one store before the other (<see cref="RunSoak"/>).</summary>
    internal const int SoakSliceSeconds = 3;

    /// <summary>
    /// Runs every worker on its own thread for <paramref name="seconds"/>: ops/s overall and per second, and the
    /// operations run and bytes the worker threads allocated while running them (not counting the final completion),
    /// and the seconds measured.
    /// </summary>
    internal static (double OpsPerSecond, IReadOnlyList<double> Series, long Operations, long AllocatedBytes,
        double Seconds) Measure(
        IYcsbStore store, IYcsbWorker[] workers, YcsbStreams[] streams, YcsbVerifier verifier, int seconds, string label)
    {
        const int Stride = 16; // one cache line per thread's counter
        long[] done = new long[workers.Length * Stride];
        long allocated = 0;
        int stop = 0;
        using var started = new CountdownEvent(workers.Length);
        var threads = workers.Select((worker, t) => new Thread(() =>
        {
            YcsbStreams stream = streams[t];
            int position = Random.Shared.Next(YcsbStreams.Length / Batch) * Batch;
            int start = position;
            long operations = 0;
            long checksum = 0;
            started.Signal();
            long allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
            while (Volatile.Read(ref stop) == 0)
            {
                checksum += worker.Run(stream, position, Batch);
                worker.Complete(wait: false);
                position = (position + Batch) & (YcsbStreams.Length - 1);
                operations += Batch;
                Volatile.Write(ref done[t * Stride], operations);
            }

            Interlocked.Add(ref allocated, GC.GetAllocatedBytesForCurrentThread() - allocatedBefore);
            worker.Complete(wait: true);
            verifier.Record(t, start, operations);
            Interlocked.Add(ref s_checksums, checksum);
        }) { IsBackground = true, Name = $"ycsb-{t}" }).ToArray();

        foreach (Thread thread in threads)
        {
            thread.Start();
        }

        started.Wait();
        var clock = Stopwatch.StartNew();
        var series = new List<double>();
        long previous = 0;
        double previousTime = 0;
        for (int second = 1; second <= seconds; second++)
        {
            SleepUntil(clock, second);
            long total = Sum(done, Stride);
            double now = clock.Elapsed.TotalSeconds;
            series.Add((total - previous) / (now - previousTime));
            long checkpoints = store.CheckpointsCommitted;
            Console.WriteLine($"{label}: {now:F1} s, {total / 1e6:F1} M ops done, {series[^1] / 1e6:F2} M ops/s" +
                (checkpoints > 0 ? $", {checkpoints} checkpoints committed" : "") +
                (store.Progress is { } progress ? $", {progress}" : ""));
            previous = total;
            previousTime = now;
        }

        long finalTotal = Sum(done, Stride);
        double elapsed = clock.Elapsed.TotalSeconds;
        Volatile.Write(ref stop, 1);
        foreach (Thread thread in threads)
        {
            thread.Join();
        }

        return (finalTotal / elapsed, series, Sum(done, Stride), Interlocked.Read(ref allocated), elapsed);
    }

    // The sampler's own pace, not synchronisation: workers run freely and are only read.
    private static void SleepUntil(Stopwatch clock, int second)
    {
        TimeSpan remaining = TimeSpan.FromSeconds(second) - clock.Elapsed;
        if (remaining > TimeSpan.Zero)
        {
            Thread.Sleep(remaining);
        }
    }

    private static long Sum(long[] done, int stride)
    {
        long total = 0;
        for (int i = 0; i < done.Length; i += stride)
        {
            total += Volatile.Read(ref done[i]);
        }

        return total;
    }
}
