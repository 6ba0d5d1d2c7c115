using System.Globalization;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>The kinds of operation a YCSB transaction stream holds.</summary>
public enum YcsbOperation : byte
{
    Read,
    Upsert,
    RMW,
    Delete,
}

/// <summary>An operation mix as read:upsert:rmw:delete percentages, for example "50:50:0:0" (YCSB-A).</summary>
public sealed record YcsbMix(int Read, int Upsert, int RMW, int Delete)
{
    public static YcsbMix Parse(string text)
    {
        string[] parts = text.Split(':');
        if (parts.Length != 4 || !parts.All(p => int.TryParse(p, NumberStyles.None, CultureInfo.InvariantCulture, out _)))
        {
            throw new ArgumentException(
                $"--mix '{text}' must be four percentages read:upsert:rmw:delete, for example 50:50:0:0.", nameof(text));
        }

        int[] values = [.. parts.Select(p => int.Parse(p, CultureInfo.InvariantCulture))];
        if (values.Sum() != 100)
        {
            throw new ArgumentException($"--mix '{text}' must add up to 100, not {values.Sum()}.", nameof(text));
        }

        return new YcsbMix(values[0], values[1], values[2], values[3]);
    }

    /// <summary>The operation for a uniform draw from 0 to 99.</summary>
    public YcsbOperation Pick(int percentile) =>
        percentile < Read ? YcsbOperation.Read
        : percentile < Read + Upsert ? YcsbOperation.Upsert
        : percentile < Read + Upsert + RMW ? YcsbOperation.RMW
        : YcsbOperation.Delete;

    public override string ToString() => $"{Read}:{Upsert}:{RMW}:{Delete}";
}
