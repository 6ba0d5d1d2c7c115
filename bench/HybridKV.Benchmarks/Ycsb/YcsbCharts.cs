using System.Globalization;
using ScottPlot;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// The run's charts (ScottPlot 5), beside its CSV: <c>STEM-throughput.png</c>, the median ops/s of every store on
/// every workload and thread count as grouped bars on a logarithmic axis (the peers differ by orders of magnitude),
/// and in <c>STEM-charts/</c> one timeline per workload and thread count: each store's ops/s in every second of its
/// measured iterations, one after another.
/// </summary>
public static class YcsbCharts
{
    private const int Width = 1400;
    private const int Height = 700;

    /// <summary>Writes the charts for <paramref name="results"/> next to <paramref name="stem"/>; returns the files.</summary>
    public static IReadOnlyList<string> Write(string stem, IReadOnlyList<YcsbResult> results)
    {
        if (results.Count == 0)
        {
            return [];
        }

        var files = new List<string> { WriteThroughput(stem + "-throughput.png", results) };
        string directory = stem + "-charts";
        Directory.CreateDirectory(directory);
        foreach (IGrouping<(string Workload, int Threads), YcsbResult> group in results.GroupBy(r => (r.Workload, r.Threads)))
        {
            string name = $"{group.Key.Workload.Replace(':', '-').Replace('/', '_')}_t{group.Key.Threads}.png";
            files.Add(WriteTimeline(Path.Combine(directory, name), group.Key.Workload, group.Key.Threads, [.. group]));
        }

        return files;
    }

    private static string WriteThroughput(string path, IReadOnlyList<YcsbResult> results)
    {
        string[] stores = [.. results.Select(r => r.Store).Distinct()];
        (string Workload, int Threads)[] groups = [.. results.Select(r => (r.Workload, r.Threads)).Distinct()];
        var plot = new Plot();
        IReadOnlyList<Bar> bars = GroupedBars.Add(plot, stores, [.. groups.Select(g => $"{g.Workload}\nthreads={g.Threads}")],
            (s, g) => results.FirstOrDefault(r =>
                    r.Store == stores[s] && r.Workload == groups[g].Workload && r.Threads == groups[g].Threads) is { Median: > 0 } result
                ? Math.Log10(result.Median)
                : null,
            Alignment.UpperRight, valueBase: 3);
        double[] decades = [3, 4, 5, 6, 7, 8];
        plot.Axes.Left.SetTicks(decades, ["1K", "10K", "100K", "1M", "10M", "100M"]);
        plot.Axes.SetLimitsY(3, Math.Max(7, Math.Ceiling(bars.Select(b => b.Value).DefaultIfEmpty(7).Max() + 0.8)));
        plot.Axes.SetLimitsX(-0.6, groups.Length - 0.4);
        plot.YLabel("ops/s (median of iterations, log scale)");
        plot.Title("YCSB: every store on the same streams, one after another in one process");
        plot.SavePng(path, Math.Max(Width, 160 * groups.Length), Height);
        return path;
    }

    private static string WriteTimeline(string path, string workload, int threads, IReadOnlyList<YcsbResult> results)
    {
        var plot = new Plot();
        var palette = new ScottPlot.Palettes.Category10();
        for (int s = 0; s < results.Count; s++)
        {
            double[] series = [.. results[s].IntervalOpsPerSecond.SelectMany(i => i).Select(v => v / 1e6)];
            double[] seconds = [.. Enumerable.Range(1, series.Length).Select(i => (double)i)];
            ScottPlot.Plottables.Scatter line = plot.Add.Scatter(seconds, series, palette.GetColor(s));
            line.LegendText = results[s].Store;
        }

        plot.ShowLegend(Alignment.UpperRight);
        plot.XLabel("second of the measured iterations");
        plot.YLabel("M ops/s");
        plot.Title(string.Create(CultureInfo.InvariantCulture, $"{workload}, threads={threads}"));
        plot.Axes.SetLimitsY(0, Math.Max(0.001, results.SelectMany(r => r.IntervalOpsPerSecond.SelectMany(i => i))
            .DefaultIfEmpty(0).Max() / 1e6 * 1.1));
        plot.SavePng(path, 900, 500);
        return path;
    }
}
