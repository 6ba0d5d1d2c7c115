using System.Diagnostics;
using System.Globalization;
using System.Numerics;
using HybridKV.Benchmarks.Callbacks;
using HybridKV.Benchmarks.LargerThanMemory;
using HybridKV.Checkpoints;

namespace HybridKV.Benchmarks.Checkpoints;

/// <summary>
/// Throughput over time while log-only CPR checkpoints are taken periodically (CPR paper Fig. 12), for fold-over and
/// snapshot commits, uniform and zipfian keys, 50:50 read:RMW on 8-byte counters; then the recovery time of the
/// last store and the rate at which recovery read its log. Prints a table and writes the per-interval series to CSV.
/// </summary>
public static class CheckpointRunner
{
    private const int Batch = 256;

    public static int Run(string[] args)
    {
        long keys = LargerThanMemoryRunner.Option(args, "--keys", 10_000_000);
        int seconds = (int)LargerThanMemoryRunner.Option(args, "--seconds", 20);
        int every = (int)LargerThanMemoryRunner.Option(args, "--checkpoint-every", 5);
        int threads = (int)LargerThanMemoryRunner.Option(args, "--threads", 1);
        double interval = LargerThanMemoryRunner.Option(args, "--interval-ms", 250) / 1000.0;
        string root = Path.GetFullPath(LargerThanMemoryRunner.OptionText(args, "--dir") ??
                                       Path.Combine("BenchmarkDotNet.Artifacts", "checkpoints"));
        Console.WriteLine($"keys={keys:N0} threads={threads} seconds={seconds} checkpoint every {every} s, dir={root}");
        var rows = new List<string>();
        using var csv = new StreamWriter(Path.Combine(Directory.CreateDirectory(root).FullName, "throughput.csv"));
        csv.WriteLine("distribution,mode,second,ops_per_sec,checkpointing");
        var directories = new List<string>();
        foreach (string distribution in new[] { "uniform", "zipf" })
        {
            long[][] streams = KeyStreams.PerThread(distribution, keys, threads);
            foreach (CheckpointMode mode in new[] { CheckpointMode.FoldOver, CheckpointMode.Snapshot })
            {
                string directory = Path.Combine(root, $"{distribution}-{mode}");
                directories.Add(directory);
                rows.Add(RunOne(directory, keys, seconds, every, interval, streams, distribution, mode, csv));
            }
        }

        Console.WriteLine();
        Console.WriteLine("| keys | mode | ops/s at rest | ops/s while checkpointing | ratio | checkpoint ms | checkpoint MB |");
        Console.WriteLine("|------|------|--------------:|--------------------------:|------:|--------------:|--------------:|");
        rows.ForEach(Console.WriteLine);
        Console.WriteLine();
        directories.ForEach(d => Console.WriteLine(MeasureRecovery(d, keys)));
        return 0;
    }

    private static StoreSettings Settings(string directory, long keys) => new()
    {
        IndexBuckets = Math.Max(1, (long)BitOperations.RoundUpToPowerOf2((ulong)keys / 4)),
        PageSizeBits = 22,
        // Room for the whole data set and its copies: this measures checkpoints, not the device.
        MemorySizeBytes = (long)BitOperations.RoundUpToPowerOf2((ulong)(keys * 24 * 4)),
        LogDirectory = directory,
        CheckpointsToKeep = 2,
    };

    private static string RunOne(string directory, long keys, int seconds, int every, double interval,
        long[][] streams, string distribution, CheckpointMode mode, StreamWriter csv)
    {
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        using var store = new HybridKVStore<long, long, long, long, Empty, CountFunctions>(Settings(directory, keys));
        using (var loader = store.NewSession())
        {
            for (long k = 0; k < keys; k++)
            {
                loader.Upsert(k, k);
            }
        }

        store.TakeCheckpointAsync(CheckpointKind.Full, mode).GetAwaiter().GetResult();
        int slots = (int)Math.Ceiling(seconds / interval) + 1;
        long[] done = new long[slots];
        var clock = Stopwatch.StartNew();
        var workers = streams.Select(stream => new Thread(() => Work(store, stream, done, clock, seconds, interval)))
            .ToArray();
        Array.ForEach(workers, w => w.Start());

        var checkpoints = new List<(double Start, double End, long Bytes)>();
        for (int next = every; next < seconds; next += every)
        {
            while (clock.Elapsed.TotalSeconds < next)
            {
                Thread.Sleep(1);
            }

            long before = store.Engine.Log.Device!.BytesWritten + DirectoryBytes(Path.Combine(directory, "checkpoints"));
            double start = clock.Elapsed.TotalSeconds;
            store.TakeCheckpointAsync(CheckpointKind.LogOnly, mode).GetAwaiter().GetResult();
            double end = clock.Elapsed.TotalSeconds;
            long after = store.Engine.Log.Device!.BytesWritten + DirectoryBytes(Path.Combine(directory, "checkpoints"));
            checkpoints.Add((start, end, Math.Max(0, after - before)));
        }

        Array.ForEach(workers, w => w.Join());
        var during = new List<double>();
        var rest = new List<double>();
        for (int slot = 1; slot < slots - 1; slot++)
        {
            double from = slot * interval;
            double to = from + interval;
            double rate = done[slot] / interval;
            bool checkpointing = checkpoints.Any(c => c.Start < to && c.End > from);
            (checkpointing ? during : rest).Add(rate);
            csv.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"{distribution},{mode},{from:F2},{rate:F0},{(checkpointing ? 1 : 0)}"));
        }

        double restRate = rest.DefaultIfEmpty(0).Average();
        double duringRate = during.DefaultIfEmpty(0).Average();
        string row = string.Create(CultureInfo.InvariantCulture,
            $"| {distribution} | {mode} | {restRate:N0} | {duringRate:N0} | {duringRate / restRate:F2} | " +
            $"{checkpoints.Average(c => (c.End - c.Start) * 1000):F0} | {checkpoints.Average(c => c.Bytes) / 1e6:F1} |");
        Console.WriteLine(row);
        return row;
    }

    private static void Work(HybridKVStore<long, long, long, long, Empty, CountFunctions> store, long[] stream,
        long[] done, Stopwatch clock, int seconds, double interval)
    {
        using var session = store.NewSession();
        long output = 0;
        int i = 0;
        while (true)
        {
            for (int b = 0; b < Batch; b++, i = (i + 1) & (stream.Length - 1))
            {
                long key = stream[i];
                if ((i & 1) == 0)
                {
                    session.Read(in key, ref output);
                }
                else
                {
                    session.RMW(in key, 1);
                }
            }

            session.CompletePending();
            double now = clock.Elapsed.TotalSeconds;
            if (now >= seconds)
            {
                session.CompletePending(wait: true);
                return;
            }

            Interlocked.Add(ref done[(int)(now / interval)], Batch);
        }
    }

    private static string MeasureRecovery(string directory, long keys)
    {
        var clock = Stopwatch.StartNew();
        using var store = new HybridKVStore<long, long, long, long, Empty, CountFunctions>(Settings(directory, keys));
        RecoveryResult result = store.RecoverAsync().GetAwaiter().GetResult()!;
        double secondsTaken = clock.Elapsed.TotalSeconds;
        long bytesRead = store.Engine.Log.Device!.BytesRead;
        long replayedBytes = result.RecordsReplayed * 24;
        return string.Create(CultureInfo.InvariantCulture,
            $"Recovery of {Path.GetFileName(directory)}, {keys:N0} keys ({result.Kind} {result.Mode}, version " +
            $"{result.Version}): {secondsTaken:F2} s; {result.RecordsReplayed:N0} records replayed " +
            $"({replayedBytes / 1e6:F0} MB, {replayedBytes / 1e6 / secondsTaken:F0} MB/s effective); " +
            $"{bytesRead / 1e6:F0} MB read from the log device");
    }

    private static long DirectoryBytes(string directory) => Directory.Exists(directory)
        ? Directory.GetFiles(directory, "*", SearchOption.AllDirectories).Sum(f => new FileInfo(f).Length)
        : 0;
}
