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

    private const int WarmupSeconds = 2;

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
                            // The same fixed key set updated without and then with log compaction (issue 18).
                            results.Add(RunStore(options, "hybridkv", mix, distribution, valueBytes, threads, streams,
                                compaction: false));
                            results.Add(RunStore(options, "hybridkv", mix, distribution, valueBytes, threads, streams,
                                compaction: true));
                            continue;
                        }

                        if (options.Scenario == "checkpoint-soak")
                        {
                            // Each store without and then with periodic checkpoints (issues 19 and 26).
                            foreach (string store in options.Stores)
                            {
                                results.Add(RunStore(options with { CheckpointEverySeconds = null }, store, mix,
                                    distribution, valueBytes, threads, streams));
                                results.Add(RunStore(options, store, mix, distribution, valueBytes, threads, streams));
                            }

                            continue;
                        }

                        foreach (string store in options.Stores)
                        {
                            results.Add(RunStore(options, store, mix, distribution, valueBytes, threads, streams));
                        }
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

    private static YcsbResult RunStore(YcsbOptions options, string storeName, YcsbMix mix, string distribution,
        int valueBytes, int threads, YcsbStreams[] streams, bool? compaction = null)
    {
        long liveBytes = options.Keys * HybridKvYcsbStore.RecordBytes(valueBytes);
        var storeOptions = new YcsbStoreOptions(options.Keys, valueBytes, options.EffectiveIndexBuckets,
            // The soak runs larger than memory unless told otherwise: updates append, and the log grows.
            options.MemoryMb ?? (compaction is null ? null
                : (long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)Math.Max(8, (liveBytes / 4) >> 20))),
            Path.Combine(options.Directory, storeName),
            options.CheckpointEverySeconds is { } every ? TimeSpan.FromSeconds(every) : null, options.CheckpointMode)
        {
            LogCompactionRatio = compaction is false ? 0 : null,
            LogSizeLimitRatio = options.LogSizeLimitRatio,
            ReadBatch = options.ReadBatch,
            Prefetch = options.Prefetch,
            ReadCacheMb = options.ReadCacheMb,
            Device = options.Device,
            AzureContainer = $"ycsb-{Guid.NewGuid():N}",
            // Disk follows the live data by whole segments: a sixteenth of the live data, from one page to 1 GiB.
            SegmentBytes = compaction is null ? 1L << 30
                : Math.Clamp((long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)(liveBytes / 16)), 1L << 22, 1L << 30),
        };
        string label = $"{storeName} {mix}/{distribution}/{valueBytes} threads={threads}" +
            (compaction is { } compacting ? compacting ? " with compaction" : " without compaction"
                : options.Scenario is null ? "" : options.CheckpointEverySeconds is { } seconds ? $" checkpoints every {seconds} s" : " no checkpoints");
        Console.WriteLine($"{label}: loading {options.Keys:N0} keys");
        using IYcsbStore store = storeName switch
        {
            "hybridkv" => HybridKvYcsbStore.Create(storeOptions),
            "hybridkv-varlen" => HybridKvYcsbStore.Create(storeOptions, variableLength: true),
            "faster" => FasterYcsbStore.Create(storeOptions, options.PeerPageCache),
            "rocksdb" => RocksDbYcsbStore.Create(storeOptions, options.PeerPageCache),
            _ => ConcurrentDictionaryYcsbStore.Create(storeOptions),
        };

        var load = Stopwatch.StartNew();
        long lastReport = 0;
        store.Load(options.Keys, threads, loaded =>
        {
            long second = (long)load.Elapsed.TotalSeconds;
            if (second > Interlocked.Exchange(ref lastReport, second) || loaded == options.Keys)
            {
                Console.WriteLine($"  loaded {loaded:N0} of {options.Keys:N0} keys, {load.Elapsed.TotalSeconds:F1} s");
            }
        });
        double loadSeconds = load.Elapsed.TotalSeconds;

        IYcsbWorker[] workers = [.. Enumerable.Range(0, threads).Select(_ => store.CreateWorker())];
        var verifier = new YcsbVerifier(streams, threads, options.Keys);
        var throughput = new List<double>();
        var intervals = new List<IReadOnlyList<double>>();
        long totalOperations = 0;
        long totalAllocated = 0;
        long checkpointsBefore = 0;
        try
        {
            // Not recorded: lets the JIT reach its optimised code and the caches fill before the first iteration.
            Measure(store, workers, streams, verifier, WarmupSeconds, $"  {label} warm-up");
            checkpointsBefore = store.CheckpointsCommitted;
            for (int iteration = 1; iteration <= options.Iterations; iteration++)
            {
                (double opsPerSecond, IReadOnlyList<double> series, long operations, long allocated) = Measure(
                    store, workers, streams, verifier, options.Seconds, $"  {label} iteration {iteration}");
                totalOperations += operations;
                totalAllocated += allocated;
                throughput.Add(opsPerSecond);
                intervals.Add(series);
                Console.WriteLine($"  {label} iteration {iteration}: {opsPerSecond / 1e6:F2} M ops/s");
            }
        }
        finally
        {
            foreach (IYcsbWorker worker in workers)
            {
                worker.Dispose();
            }
        }

        var verify = Stopwatch.StartNew();
        YcsbVerification verification = verifier.Verify(store);
        Console.WriteLine($"  {label} verified in {verify.Elapsed.TotalSeconds:F1} s: {verification}");

        return new YcsbResult(storeName, mix.ToString(), distribution, valueBytes, threads, options.Keys, throughput,
            intervals, loadSeconds, totalOperations == 0 ? 0 : (double)totalAllocated / totalOperations)
        {
            CheckpointsCommitted = store.CheckpointsCommitted - checkpointsBefore,
            Checkpointed = options.CheckpointEverySeconds is not null,
            Compacted = compaction is true,
            PeakDiskBytes = store.PeakDiskBytes,
            LiveBytes = liveBytes,
            LogWrittenBytes = store.LogWrittenBytes,
            Verification = verification,
        };
    }

    /// <summary>
    /// Runs every worker on its own thread for <paramref name="seconds"/>: ops/s overall and per second, and the
    /// operations run and bytes the worker threads allocated while running them (not counting the final completion).
    /// </summary>
    private static (double OpsPerSecond, IReadOnlyList<double> Series, long Operations, long AllocatedBytes) Measure(
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

        return (finalTotal / elapsed, series, Sum(done, Stride), Interlocked.Read(ref allocated));
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
