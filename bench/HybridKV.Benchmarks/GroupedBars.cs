using ScottPlot;

namespace HybridKV.Benchmarks;

/// <summary>Grouped bar charts (ScottPlot 5): one bar per series in each group, a legend of the series and a tick per
/// group; the charts of the YCSB runner and of the server benchmark.</summary>
internal static class GroupedBars
{
    /// <summary>
    /// Adds to <paramref name="plot"/> the bars <paramref name="valueOf"/> gives (series, group; null: no bar), from
    /// <paramref name="valueBase"/>, with the legend at <paramref name="legend"/> and the groups' labels below.
    /// </summary>
    /// <returns>The bars added.</returns>
    public static IReadOnlyList<Bar> Add(Plot plot, string[] series, string[] groupLabels, Func<int, int, double?> valueOf,
        Alignment legend, double valueBase = 0)
    {
        var palette = new ScottPlot.Palettes.Category10();
        var bars = new List<Bar>();
        double width = 0.8 / series.Length;
        for (int g = 0; g < groupLabels.Length; g++)
        {
            for (int s = 0; s < series.Length; s++)
            {
                if (valueOf(s, g) is not { } value)
                {
                    continue;
                }

                bars.Add(new Bar
                {
                    Position = g + ((s - ((series.Length - 1) / 2.0)) * width),
                    Value = value,
                    ValueBase = valueBase,
                    Size = width * 0.95,
                    FillColor = palette.GetColor(s),
                    LineWidth = 0,
                });
            }
        }

        plot.Add.Bars(bars);
        for (int s = 0; s < series.Length; s++)
        {
            plot.Legend.ManualItems.Add(new LegendItem { LabelText = series[s], FillColor = palette.GetColor(s) });
        }

        plot.ShowLegend(legend);
        plot.Axes.Bottom.SetTicks([.. Enumerable.Range(0, groupLabels.Length).Select(g => (double)g)], groupLabels);
        plot.Axes.Bottom.TickLabelStyle.FontSize = 10;
        return bars;
    }
}
