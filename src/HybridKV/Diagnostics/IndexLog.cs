using Microsoft.Extensions.Logging;

namespace HybridKV.Diagnostics;

/// <summary>Log messages of the hash index, with stable event ids (200–299).</summary>
internal static partial class IndexLog
{
    [LoggerMessage(EventId = 200, Level = LogLevel.Information,
        Message = "Index grew from {OldBuckets} to {NewBuckets} buckets: prepare {PrepareMs:F3} ms, longest chunk split " +
                  "{SplitMs:F3} ms ({SplitByOperations} of {Chunks} chunks split by operations), {TotalMs:F1} ms in all")]
    public static partial void Resized(ILogger logger, long oldBuckets, long newBuckets, double prepareMs, double splitMs,
        int splitByOperations, int chunks, double totalMs);

    [LoggerMessage(EventId = 201, Level = LogLevel.Error,
        Message = "Growing the index failed; it keeps its size")]
    public static partial void GrowthFailed(ILogger logger, Exception error);
}
