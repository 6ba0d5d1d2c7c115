namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// One store on one workload: every iteration's throughput and the per-second series of each, and the bytes the
/// worker threads allocated per operation over all measured iterations.
/// </summary>
public sealed record YcsbResult(
    string Store,
    string Mix,
    string Distribution,
    int ValueBytes,
    int Threads,
    long Keys,
    IReadOnlyList<double> OpsPerSecond,
    IReadOnlyList<IReadOnlyList<double>> IntervalOpsPerSecond,
    double LoadSeconds,
    double AllocatedBytesPerOperation)
{
    /// <summary>Checkpoints committed during the measured iterations (not the warm-up).</summary>
    public long CheckpointsCommitted { get; init; }

    /// <summary>Whether the store took periodic checkpoints.</summary>
    public bool Checkpointed { get; init; }

    /// <summary>Whether the store compacted its log (the soak scenario's second run).</summary>
    public bool Compacted { get; init; }

    /// <summary>The most bytes the store's log files held at any sample.</summary>
    public long PeakDiskBytes { get; init; }

    /// <summary>What the fixed key set's records take: keys times the record size.</summary>
    public long LiveBytes { get; init; }

    /// <summary>Bytes the log appended, loading included.</summary>
    public long LogWrittenBytes { get; init; }

    /// <summary>What the check of sampled keys after the run found (null if not verified).</summary>
    public YcsbVerification? Verification { get; init; }

    /// <summary>The slowest one-second interval of any measured iteration.</summary>
    public double SlowestSecond => IntervalOpsPerSecond.SelectMany(series => series).DefaultIfEmpty(0).Min();

    /// <summary>The workload as RESULT lines name it: mix/distribution/value bytes.</summary>
    public string Workload => $"{Mix}/{Distribution}/{ValueBytes}";

    public double Median
    {
        get
        {
            double[] sorted = [.. OpsPerSecond.Order()];
            int middle = sorted.Length / 2;
            return sorted.Length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
        }
    }

    public double Min => OpsPerSecond.Min();

    public double Max => OpsPerSecond.Max();
}

/// <summary>The memory system's limit for one working set and thread count: random 8-byte loads per second.</summary>
public sealed record ProbeResult(string Distribution, int ValueBytes, int Threads, long ArrayBytes, double IndependentLoadsPerSecond,
    double DependentLoadsPerSecond);
