using ScottPlot;

namespace HybridKV.Benchmarks.Server;

/// <summary>The server benchmark's chart (ScottPlot 5): ops/s of every server as grouped bars per test line.</summary>
internal static class ServerBenchmarkChart
{
    public static string Write(string path, IReadOnlyList<ServerBenchmarkResult> results)
    {
        string[] servers = [.. results.Select(r => r.Server).Distinct()];
        (string Test, int Pipeline, int ValueBytes)[] groups = [.. results.Select(r => (r.Test, r.Pipeline, r.ValueBytes)).Distinct()];
        var plot = new Plot();
        GroupedBars.Add(plot, servers, [.. groups.Select(g => $"{g.Test}\nP={g.Pipeline} d={g.ValueBytes}")], (s, g) =>
            results.FirstOrDefault(r => r.Server == servers[s] && (r.Test, r.Pipeline, r.ValueBytes) == groups[g])
                ?.OpsPerSecond / 1000, Alignment.UpperLeft);
        plot.Axes.Left.Label.Text = "thousand requests/s (redis-benchmark)";
        plot.Axes.Margins(bottom: 0);
        plot.Title("RESP servers, same redis-benchmark, client and server on one machine");
        plot.SavePng(path, 1400, 700);
        return path;
    }
}
