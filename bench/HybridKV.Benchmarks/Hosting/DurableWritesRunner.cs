using System.Diagnostics;
using System.Diagnostics.Metrics;
using CountStore;
using HybridKV.Benchmarks.LargerThanMemory;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace HybridKV.Benchmarks.Hosting;

/// <summary>
/// The load a service with durable acknowledgements puts on the hosting package: a real generic host with the count
/// store on a local file device, and N concurrent clients each doing one durable RMW at a time
/// (<c>RunDurableAsync</c>, acknowledged once a checkpoint holds it) in a closed loop. Prints the acknowledged writes
/// per second, the latency percentiles and the number of checkpoints that acknowledged them, as a RESULT line.
/// </summary>
public static class DurableWritesRunner
{
    public static int Run(string[] args)
    {
        int concurrency = (int)LargerThanMemoryRunner.Option(args, "--concurrency", 64);
        int seconds = (int)LargerThanMemoryRunner.Option(args, "--seconds", 10);
        double commitDelayMs = LargerThanMemoryRunner.Option(args, "--commit-delay-ms", 0);
        string mode = LargerThanMemoryRunner.OptionText(args, "--mode") ?? "FoldOver";
        string directory = Path.GetFullPath(LargerThanMemoryRunner.OptionText(args, "--dir") ??
                                            Path.Combine("BenchmarkDotNet.Artifacts", "durable-writes"));
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        HostApplicationBuilder builder = Host.CreateApplicationBuilder(
            new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Services.AddHybridKV<Counts.Store, Counts.Session>(configure: options =>
        {
            options.Directory = directory;
            options.SessionPoolSize = 16;
            options.CommitDelay = TimeSpan.FromMilliseconds(commitDelayMs);
            options.CheckpointMode = Enum.Parse<HybridKV.Checkpoints.CheckpointMode>(mode);
        });
        using IHost host = builder.Build();
        using var checkpoints = new MeterListener();
        long checkpointCount = 0;
        checkpoints.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "HybridKV.Hosting" && instrument.Name == "hybridkv.checkpoint.duration")
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        checkpoints.SetMeasurementEventCallback<double>((_, _, _, _) => Interlocked.Increment(ref checkpointCount));
        checkpoints.Start();
        host.StartAsync().GetAwaiter().GetResult();
        var pool = host.Services.GetRequiredService<HybridKVSessionPool<Counts.Store, Counts.Session>>();

        // One second of warm-up (JIT, first full checkpoint), then the measured run.
        RunClients(pool, concurrency, TimeSpan.FromSeconds(1));
        long checkpointsBefore = Interlocked.Read(ref checkpointCount);
        var clock = Stopwatch.StartNew();
        List<double> latencies = RunClients(pool, concurrency, TimeSpan.FromSeconds(seconds));
        long taken = Interlocked.Read(ref checkpointCount) - checkpointsBefore;
        double elapsed = clock.Elapsed.TotalSeconds;
        host.StopAsync().GetAwaiter().GetResult();

        latencies.Sort();
        double Percentile(double p) => latencies[Math.Min(latencies.Count - 1, (int)(p * latencies.Count))];
        Console.WriteLine(
            $"RESULT scenario=durable-writes concurrency={concurrency} mode={mode} commit_delay_ms={commitDelayMs} " +
            $"writes_per_sec={latencies.Count / elapsed:F0} p50_ms={Percentile(0.50):F2} p90_ms={Percentile(0.90):F2} " +
            $"p99_ms={Percentile(0.99):F2} checkpoints={taken} writes_per_checkpoint=" +
            $"{(taken == 0 ? 0 : latencies.Count / (double)taken):F1}");
        return 0;
    }

    private static List<double> RunClients(
        HybridKVSessionPool<Counts.Store, Counts.Session> pool, int concurrency, TimeSpan duration)
    {
        var latencies = new List<double>[concurrency];
        var stop = Stopwatch.StartNew();
        Task[] clients = Enumerable.Range(0, concurrency).Select(client => Task.Run(async () =>
        {
            var mine = latencies[client] = new List<double>(4096);
            var random = new Random(client);
            while (stop.Elapsed < duration)
            {
                long key = random.Next(100_000);
                long started = Stopwatch.GetTimestamp();
                await pool.RunDurableAsync(session => session.RMW(key, 1)).ConfigureAwait(false);
                mine.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
            }
        })).ToArray();
        Task.WaitAll(clients);
        return latencies.SelectMany(l => l).ToList();
    }
}
