using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;
using System.Numerics;
using HybridKV.Devices;

namespace HybridKV.Benchmarks.LargerThanMemory;

/// <summary>
/// Throughput of a store whose memory holds about a quarter of its data, on a local file device: uniform and zipfian
/// keys, 50:50 read:upsert, 100% RMW and 100% upsert (which is bound by flushing), 100-byte values. Reports bytes written and read, the log's flush rate, and
/// that rate as a fraction of the same directory's raw sequential direct-I/O write rate measured with dd.
/// </summary>
public static partial class LargerThanMemoryRunner
{
    private const int Batch = 256;

    public static int Run(string[] args)
    {
        long keys = Option(args, "--keys", 2_200_000);
        long memoryMb = Option(args, "--memory-mb", 64);
        int seconds = (int)Option(args, "--seconds", 10);
        int threads = (int)Option(args, "--threads", 1);
        string directory = Path.GetFullPath(OptionText(args, "--dir") ?? Path.Combine("BenchmarkDotNet.Artifacts", "ltm"));
        long recordBytes = 8 + 8 + 104;
        Console.WriteLine($"keys={keys:N0} records={recordBytes} B data={keys * recordBytes / (1 << 20):N0} MiB " +
                          $"memory={memoryMb} MiB threads={threads} seconds={seconds} dir={directory}");

        var results = new List<string>();
        foreach (string distribution in new[] { "uniform", "zipf" })
        {
            long[][] streams = KeyStreams.PerThread(distribution, keys, threads);
            foreach (string mix in new[] { "50:50 read:upsert", "100% RMW", "100% upsert" })
            {
                results.Add(RunOne(directory, keys, memoryMb, seconds, streams, distribution, mix));
            }
        }

        double ddMbPerSecond = MeasureDirectWriteRate(directory);
        Console.WriteLine();
        Console.WriteLine($"Raw sequential write rate of {directory} (dd, 4 MiB blocks, oflag=direct): {ddMbPerSecond:F0} MB/s");
        Console.WriteLine();
        Console.WriteLine("| keys | mix | ops/s | pending % | written MB | read MB | flush MB/s | flush / dd |");
        Console.WriteLine("|------|-----|------:|----------:|-----------:|--------:|-----------:|-----------:|");
        foreach (string row in results)
        {
            string[] parts = row.Split('|');
            double flushRate = double.Parse(parts[6], CultureInfo.InvariantCulture);
            Console.WriteLine($"| {string.Join(" | ", parts)} | {flushRate / ddMbPerSecond:F2} |");
        }

        return 0;
    }

    private static string RunOne(
        string root, long keys, long memoryMb, int seconds, long[][] streams, string distribution, string mix)
    {
        string directory = Path.Combine(root, $"{distribution}-{mix.Replace(' ', '-').Replace('%', 'p').Replace(':', '-')}");
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        var device = new LocalFileDevice(new LocalFileDeviceOptions { Directory = directory, SegmentSize = 1L << 28 });
        using (device)
        using (var store = new HybridKVStore<long, Value100, long, long, byte, Value100Functions>(new StoreSettings
        {
            IndexBuckets = Math.Max(1, (long)BitOperations.RoundUpToPowerOf2((ulong)keys / 4)),
            PageSizeBits = 22,
            MemorySizeBytes = memoryMb << 20,
            LogDevice = device,
        }))
        {
            var clock = Stopwatch.StartNew();
            using (var loader = store.NewSession())
            {
                for (long k = 0; k < keys; k++)
                {
                    loader.Upsert(k, new Value100 { Counter = k });
                }
            }

            Console.WriteLine($"{distribution} {mix}: loaded {keys:N0} keys in {clock.Elapsed.TotalSeconds:F1} s, " +
                              $"log {store.TailAddress / (1 << 20):N0} MiB, head at {store.HeadAddress / (1 << 20):N0} MiB");

            long writtenBefore = device.BytesWritten;
            long readBefore = device.BytesRead;
            long operations = 0;
            long pending = 0;
            bool rmw = mix == "100% RMW";
            bool upsertOnly = mix == "100% upsert";
            using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
            clock.Restart();
            Task[] workers = streams.Select(stream => Task.Factory.StartNew(() =>
            {
                using var session = store.NewSession();
                long done = 0;
                long wentPending = 0;
                int next = 0;
                var value = new Value100();
                long output = 0;
                while (!stop.IsCancellationRequested)
                {
                    for (int i = 0; i < Batch; i++)
                    {
                        long key = stream[next];
                        next = (next + 1) & (stream.Length - 1);
                        Status status;
                        if (rmw)
                        {
                            status = session.RMW(key, 1);
                        }
                        else if ((i & 1) == 0 && !upsertOnly)
                        {
                            status = session.Read(key, ref output);
                        }
                        else
                        {
                            value.Counter = key;
                            status = session.Upsert(key, value);
                        }

                        wentPending += status == Status.Pending ? 1 : 0;
                    }

                    done += Batch;
                    session.CompletePending();
                }

                session.CompletePending(wait: true);
                Interlocked.Add(ref operations, done);
                Interlocked.Add(ref pending, wentPending);
            }, TaskCreationOptions.LongRunning)).ToArray();
            Task.WaitAll(workers);
            double elapsed = clock.Elapsed.TotalSeconds;
            double written = (device.BytesWritten - writtenBefore) / 1e6;
            double read = (device.BytesRead - readBefore) / 1e6;
            string row = string.Create(CultureInfo.InvariantCulture,
                $"{distribution}|{mix}|{operations / elapsed:N0}|{100.0 * pending / Math.Max(1, operations):F1}|{written:F0}|{read:F0}|{written / elapsed:F1}");
            Console.WriteLine($"RESULT {row.Replace('|', ' ')}");
            return row;
        }
    }

    private static double MeasureDirectWriteRate(string directory)
    {
        Directory.CreateDirectory(directory);
        string target = Path.Combine(directory, "dd-probe.bin");
        var start = new ProcessStartInfo("dd", $"if=/dev/zero of={target} bs=4M count=256 oflag=direct conv=fsync")
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
        };
        using Process dd = Process.Start(start)!;
        string report = dd.StandardError.ReadToEnd();
        dd.WaitForExit();
        File.Delete(target);
        Match match = DdRate().Match(report);
        if (!match.Success)
        {
            throw new InvalidOperationException($"Could not read dd's rate from: {report}");
        }

        double bytes = double.Parse(match.Groups["bytes"].Value, CultureInfo.InvariantCulture);
        double seconds = double.Parse(match.Groups["seconds"].Value, CultureInfo.InvariantCulture);
        return bytes / seconds / 1e6;
    }

    [GeneratedRegex(@"(?<bytes>\d+) bytes .* copied, (?<seconds>[\d.]+) s")]
    private static partial Regex DdRate();

    internal static long Option(string[] args, string name, long fallback) =>
        OptionText(args, name) is { } text ? long.Parse(text, CultureInfo.InvariantCulture) : fallback;

    internal static string? OptionText(string[] args, string name)
    {
        int index = Array.IndexOf(args, name);
        return index >= 0 && index + 1 < args.Length ? args[index + 1] : null;
    }
}
