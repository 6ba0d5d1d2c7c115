using System.Diagnostics;
using System.Globalization;
using HybridKV.Benchmarks.Callbacks;
using HybridKV.Devices;
using HybridKV.Sessions;

namespace HybridKV.Benchmarks.Probes;

/// <summary>
/// What one compaction costs, alone on the machine (issue 18): the uniform soak's store (a fixed key set, 32-byte
/// records, memory a quarter of the data, an index of half as many buckets as keys) is updated a range at a time and
/// compacted by hand whenever its part on the device reaches three times the live data, the oldest range at a time,
/// nothing else running meanwhile. The soak measures compaction beside a writer on a noisy machine; this measures the
/// compaction's own wall and processor time per record examined, and puts it beside the writer's processor time per
/// upsert measured in the same run (the soak's store is capped where one compaction's records dropped per second meet
/// the writer's upserts per second). Prints <c>RESULT probe=compaction ...</c>.
/// </summary>
internal static class CompactionProbe
{
    public static int Run(string[] args)
    {
        string directory = CommandLine.Option(args, "--dir") ?? Path.Combine(Path.GetTempPath(), "hybridkv-compaction-probe");
        long keys = long.Parse(CommandLine.Option(args, "--keys") ?? "1000000", CultureInfo.InvariantCulture);
        long rangeBytes = long.Parse(CommandLine.Option(args, "--range-mb") ?? "20", CultureInfo.InvariantCulture) << 20;
        int rounds = int.Parse(CommandLine.Option(args, "--rounds") ?? "60", CultureInfo.InvariantCulture);
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        try
        {
            long recordBytes = HybridKV.Log.LogRecord<long, long>.FixedSize;
            long liveBytes = keys * recordBytes;
            using var device = new LocalFileDevice(new LocalFileDeviceOptions { Directory = Path.Combine(directory, "log") });
            using var store = new HybridKVStore<long, long, long, long, Empty, CountFunctions>(new StoreSettings
            {
                LogDevice = device,
                IndexBuckets = (long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)Math.Max(64, keys / 2)),
                MemorySizeBytes = (long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)Math.Max(1L << 20, liveBytes / 4)),
                PageSizeBits = Math.Clamp(System.Numerics.BitOperations.Log2((ulong)Math.Max(1L << 20, liveBytes / 4) / 8), 16, 22),
                LogCompactionRatio = 0,
            });
            using Session<long, long, long, long, Empty, CountFunctions> session = store.NewSession();
            // What each key must read at the end: the run is verified, as every runner's is.
            var expected = new long[keys];
            for (long key = 0; key < keys; key++)
            {
                session.Upsert(key, key);
                expected[key] = key;
            }

            var random = new Random(1);
            long upsertsPerRound = rangeBytes / recordBytes;
            using var process = Process.GetCurrentProcess();
            // Totals of the rounds measured: the first third warms the compactor up (and the log up to the trigger).
            double upsertNs = 0, compactWallNs = 0, compactCpuNs = 0;
            long upserts = 0, examined = 0, copied = 0, compactions = 0;
            for (int round = 0; round < rounds; round++)
            {
                TimeSpan cpu = CpuTime(process);
                for (long i = 0; i < upsertsPerRound; i++)
                {
                    long key = random.NextInt64(keys);
                    long value = ((long)round << 32) | i;
                    session.Upsert(key, value);
                    expected[key] = value;
                }

                session.CompletePending(wait: true);
                bool measured = round >= rounds / 3;
                if (measured)
                {
                    upsertNs += (CpuTime(process) - cpu).TotalNanoseconds;
                    upserts += upsertsPerRound;
                }

                if (store.HeadAddress - store.BeginAddress < 3 * liveBytes)
                {
                    continue;
                }

                cpu = CpuTime(process);
                long started = Stopwatch.GetTimestamp();
                CompactionResult result = store.CompactAsync(store.BeginAddress + rangeBytes).GetAwaiter().GetResult();
                double wall = Stopwatch.GetElapsedTime(started).TotalNanoseconds;
                double used = (CpuTime(process) - cpu).TotalNanoseconds;
                if (measured)
                {
                    compactWallNs += wall;
                    compactCpuNs += used;
                    examined += result.RecordsExamined;
                    copied += result.RecordsCopied;
                    compactions++;
                }

                if (round % 10 == 0)
                {
                    Console.WriteLine(
                        $"round {round}: compacted {result.RecordsExamined:N0} records ({result.RecordsCopied:N0} copied) in " +
                        $"{wall / 1e6:F1} ms, {used / 1e6:F1} ms of processor time; log on the device " +
                        $"{(store.HeadAddress - store.BeginAddress) / (double)liveBytes:F2}x the live data");
                }
            }

            long wrong = 0;
            for (long key = 0; key < keys; key++)
            {
                if (session.ReadAsync(key).AsTask().GetAwaiter().GetResult() is var read &&
                    (read.Status != Status.Ok || read.Output != expected[key]))
                {
                    wrong++;
                }
            }

            Console.WriteLine($"verified {keys:N0} keys: {wrong:N0} wrong");
            if (wrong > 0)
            {
                Console.Error.WriteLine($"{wrong} keys read another value than their last upsert.");
                return 1;
            }

            if (examined == 0 || upserts == 0)
            {
                Console.Error.WriteLine("No compaction was measured: give more --rounds.");
                return 1;
            }

            double wallPerRecord = compactWallNs / examined;
            double cpuPerRecord = compactCpuNs / examined;
            double cpuPerUpsert = upsertNs / upserts;
            Console.WriteLine(
                $"RESULT probe=compaction keys={keys} range_mb={rangeBytes >> 20} compactions={compactions} " +
                $"wall_ns_per_record={wallPerRecord:F0} cpu_ns_per_record={cpuPerRecord:F0} " +
                $"records_per_sec={1e9 / wallPerRecord:F0} copied_fraction={(double)copied / examined:F3} " +
                $"upsert_cpu_ns={cpuPerUpsert:F0} cpu_ratio_to_upsert={cpuPerRecord / cpuPerUpsert:F2}");
        }
        finally
        {
            if (Directory.Exists(directory))
            {
                Directory.Delete(directory, recursive: true);
            }
        }

        return 0;
    }

    private static TimeSpan CpuTime(Process process)
    {
        process.Refresh();
        return process.TotalProcessorTime;
    }
}
