using System.Globalization;
using System.Text;
using System.Text.Json;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// Writes the run's results: a readable table (median and spread, ratio to ConcurrentDictionary and to the memory
/// probe, bytes allocated per operation), a CSV and a JSON file, and one RESULT line per store and workload, last.
/// </summary>
public static class YcsbReport
{
    private static readonly JsonSerializerOptions Json = new() { WriteIndented = true };

    public static void Write(YcsbOptions options, IReadOnlyList<YcsbResult> results, IReadOnlyList<ProbeResult> probes)
    {
        Console.WriteLine();
        Console.WriteLine("| store | workload | threads | M ops/s (median) | min–max | vs concurrentdictionary | of independent loads | of dependent loads | B/op |");
        Console.WriteLine("|---|---|---:|---:|---:|---:|---:|---:|---:|");
        foreach (YcsbResult result in results)
        {
            YcsbResult? peer = results.FirstOrDefault(r => r.Store == "concurrentdictionary" && Same(r, result));
            ProbeResult? probe = probes.FirstOrDefault(p => p.Distribution == result.Distribution &&
                p.ValueBytes == result.ValueBytes && p.Threads == result.Threads);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {result.Store} | {result.Workload} | {result.Threads} | {result.Median / 1e6:F2} | " +
                $"{result.Min / 1e6:F2}–{result.Max / 1e6:F2} | {PairedRatio(result, peer)} | " +
                $"{Ratio(result.Median, probe?.IndependentLoadsPerSecond)} | {Ratio(result.Median, probe?.DependentLoadsPerSecond)} | " +
                $"{result.AllocatedBytesPerOperation:F2} |"));
        }

        WritePeerTable(results);
        Directory.CreateDirectory(options.OutputDirectory);
        string stem = Path.Combine(options.OutputDirectory,
            "ycsb-" + DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        File.WriteAllText(stem + ".csv", Csv(results));
        File.WriteAllText(stem + ".json", JsonSerializer.Serialize(new { options, results, probes }, Json));
        Console.WriteLine();
        Console.WriteLine($"results: {stem}.csv, {stem}.json");
        try
        {
            IReadOnlyList<string> charts = YcsbCharts.Write(stem, results);
            Console.WriteLine($"charts: {string.Join(", ", charts.Take(2))}{(charts.Count > 2 ? $" and {charts.Count - 2} more" : "")}");
        }
        catch (Exception error) when (error is TypeInitializationException or DllNotFoundException or IOException)
        {
            // The charts need SkiaSharp's native library and a font; the results above do not.
            Console.WriteLine($"charts: not written ({error.GetType().Name}: {error.Message})");
        }

        foreach (YcsbResult result in results.Where(r => r.Verification is not null))
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"VERIFY store={result.Store} workload={result.Workload} threads={result.Threads} " +
                $"{(result.Verification!.Ok ? "ok" : "FAILED")} {result.Verification}"));
        }

        if (options.Scenario == "checkpoint-soak")
        {
            WriteCheckpointSoak(results);
            return;
        }

        if (options.Scenario == "soak")
        {
            WriteSoak(results);
            return;
        }

        foreach (YcsbResult result in results)
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"RESULT store={result.Store} workload={result.Workload} threads={result.Threads} ops_per_sec={result.Median:F0}"));
        }
    }

    /// <summary>One RESULT line per workload: throughput with checkpoints over throughput without, over the whole run.</summary>
    private static void WriteCheckpointSoak(IReadOnlyList<YcsbResult> results)
    {
        foreach (YcsbResult with in results.Where(r => r.Checkpointed))
        {
            YcsbResult without = results.First(r => !r.Checkpointed && r.Store == with.Store && Same(r, with));
            double ratio = with.OpsPerSecond.Average() / without.OpsPerSecond.Average();
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"RESULT scenario=checkpoint-soak store={with.Store} ratio={ratio:F2} checkpoints={with.CheckpointsCommitted} " +
                $"slowest_second_ops_per_sec={with.SlowestSecond:F0} workload={with.Workload} threads={with.Threads} " +
                $"ops_per_sec_with={with.OpsPerSecond.Average():F0} ops_per_sec_without={without.OpsPerSecond.Average():F0}"));
        }
    }

    /// <summary>One RESULT line per workload: peak disk over live data with compaction, and throughput with
    /// compaction over throughput without, over the whole run.</summary>
    private static void WriteSoak(IReadOnlyList<YcsbResult> results)
    {
        foreach (YcsbResult with in results.Where(r => r.Compacted))
        {
            YcsbResult without = results.First(r => !r.Compacted && Same(r, with));
            double ratio = with.OpsPerSecond.Average() / without.OpsPerSecond.Average();
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"RESULT scenario=soak live_bytes={with.LiveBytes} peak_disk_bytes={with.PeakDiskBytes} " +
                $"disk_ratio={(double)with.PeakDiskBytes / with.LiveBytes:F2} throughput_ratio={ratio:F2} " +
                $"written_ratio={(double)with.LogWrittenBytes / with.LiveBytes:F1} workload={with.Workload} " +
                $"threads={with.Threads} ops_per_sec_with={with.OpsPerSecond.Average():F0} " +
                $"ops_per_sec_without={without.OpsPerSecond.Average():F0} " +
                $"peak_disk_bytes_without={without.PeakDiskBytes}"));
        }
    }

    /// <summary>
    /// When HybridKV ran beside a peer: one row per workload and thread count with every store's median M ops/s and
    /// HybridKV's ratio to each peer (above 1: HybridKV is faster), paired by iteration (<see cref="PairedRatio"/>).
    /// </summary>
    private static void WritePeerTable(IReadOnlyList<YcsbResult> results)
    {
        string[] peers = [.. results.Select(r => r.Store).Distinct().Where(s => s is not ("hybridkv" or "hybridkv-varlen"))];
        if (peers.Length == 0 || !results.Any(r => r.Store == "hybridkv") || results.Any(r => r.Checkpointed || r.Compacted))
        {
            return;
        }

        Console.WriteLine();
        Console.WriteLine($"| workload | threads | hybridkv | {string.Join(" | ", peers)} | {string.Join(" | ", peers.Select(p => $"hybridkv / {p}"))} |");
        Console.WriteLine($"|---|---:|---:|{string.Concat(peers.Select(_ => "---:|"))}{string.Concat(peers.Select(_ => "---:|"))}");
        foreach (YcsbResult hybrid in results.Where(r => r.Store == "hybridkv"))
        {
            YcsbResult?[] peerResults = [.. peers.Select(p => results.FirstOrDefault(r => r.Store == p && Same(r, hybrid)))];
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {hybrid.Workload} | {hybrid.Threads} | {hybrid.Median / 1e6:F3} | " +
                $"{string.Join(" | ", peerResults.Select(p => p is null ? "–" : (p.Median / 1e6).ToString("F3", CultureInfo.InvariantCulture)))} | " +
                $"{string.Join(" | ", peerResults.Select(p => PairedRatio(hybrid, p)))} |"));
        }
    }

    private static bool Same(YcsbResult first, YcsbResult second) =>
        first.Workload == second.Workload && first.Threads == second.Threads;

    /// <summary>
    /// The median of the ratios of iterations run one right after the other (the stores' iterations alternate), which
    /// a machine whose speed drifts between iterations moves far less than the ratio of the two medians.
    /// </summary>
    private static string PairedRatio(YcsbResult result, YcsbResult? peer)
    {
        if (peer is null || peer.OpsPerSecond.Count != result.OpsPerSecond.Count || peer.OpsPerSecond.Any(o => o <= 0))
        {
            return Ratio(result.Median, peer?.Median);
        }

        double[] ratios = [.. result.OpsPerSecond.Select((ops, i) => ops / peer.OpsPerSecond[i]).Order()];
        double median = ratios.Length % 2 == 1
            ? ratios[ratios.Length / 2]
            : (ratios[(ratios.Length / 2) - 1] + ratios[ratios.Length / 2]) / 2;
        return median.ToString("F2", CultureInfo.InvariantCulture);
    }

    private static string Ratio(double value, double? peer) =>
        peer is > 0 ? (value / peer.Value).ToString("F2", CultureInfo.InvariantCulture) : "–";

    private static string Csv(IReadOnlyList<YcsbResult> results)
    {
        var csv = new StringBuilder("store,mix,distribution,value_bytes,threads,keys,load_seconds,median_ops_per_sec,min_ops_per_sec,max_ops_per_sec,allocated_bytes_per_op,verified_keys,verify_failures,iterations_ops_per_sec\n");
        foreach (YcsbResult r in results)
        {
            csv.Append(CultureInfo.InvariantCulture,
                $"{r.Store},{r.Mix},{r.Distribution},{r.ValueBytes},{r.Threads},{r.Keys},{r.LoadSeconds:F2},{r.Median:F0},{r.Min:F0},{r.Max:F0},{r.AllocatedBytesPerOperation:F3},{r.Verification?.Checked},{r.Verification?.Failed},")
                .AppendJoin(' ', r.OpsPerSecond.Select(v => v.ToString("F0", CultureInfo.InvariantCulture)))
                .Append('\n');
        }

        return csv.ToString();
    }
}
