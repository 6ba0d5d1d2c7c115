using ScottPlot;

namespace HybridKV.Benchmarks.Server;

/// <summary>The server benchmark's chart (ScottPlot 5): ops/s of every server as grouped bars per test line.</summary>
internal static class ServerBenchmarkChart
{
    public static string Write(string path, IReadOnlyList<ServerBenchmarkResult> results)
    {
        string[] servers = [.. results.Select(r => r.Server).Distinct()];
        (string Test, int Pipeline, int ValueBytes)[] groups = [.. results.Select(r => (r.Test, r.Pipeline, r.ValueBytes)).Distinct()];
        var palette = new ScottPlot.Palettes.Category10();
        var plot = new Plot();
        var bars = new List<Bar>();
        double width = 0.8 / servers.Length;
        for (int g = 0; g < groups.Length; g++)
        {
            for (int s = 0; s < servers.Length; s++)
            {
                ServerBenchmarkResult? result = results.FirstOrDefault(r => r.Server == servers[s] &&
                    (r.Test, r.Pipeline, r.ValueBytes) == groups[g]);
                if (result is null)
                {
                    continue;
                }

                bars.Add(new Bar
                {
                    Position = g + ((s - ((servers.Length - 1) / 2.0)) * width),
                    Value = result.OpsPerSecond / 1000,
                    Size = width * 0.95,
                    FillColor = palette.GetColor(s),
                    LineWidth = 0,
                });
            }
        }

        plot.Add.Bars(bars);
        for (int s = 0; s < servers.Length; s++)
        {
            plot.Legend.ManualItems.Add(new LegendItem { LabelText = servers[s], FillColor = palette.GetColor(s) });
        }

        plot.ShowLegend(Alignment.UpperLeft);
        plot.Axes.Bottom.SetTicks(
            [.. Enumerable.Range(0, groups.Length).Select(g => (double)g)],
            [.. groups.Select(g => $"{g.Test}\nP={g.Pipeline} d={g.ValueBytes}")]);
        plot.Axes.Bottom.TickLabelStyle.FontSize = 10;
        plot.Axes.Left.Label.Text = "thousand requests/s (redis-benchmark)";
        plot.Axes.Margins(bottom: 0);
        plot.Title("RESP servers, same redis-benchmark, client and server on one machine");
        plot.SavePng(path, 1400, 700);
        return path;
    }
}
