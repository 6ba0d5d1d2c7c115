namespace HybridKV.Benchmarks.Server;

/// <summary>One line of the server benchmark: a server, a test, a pipeline depth and a value size.</summary>
/// <param name="Server">hybridkv, garnet or redis.</param>
/// <param name="Test">SET, GET or INCR, as redis-benchmark names it.</param>
/// <param name="Pipeline">Requests in flight per connection.</param>
/// <param name="ValueBytes">The value size (-d).</param>
/// <param name="OpsPerSecond">redis-benchmark's requests per second.</param>
/// <param name="P50Milliseconds">redis-benchmark's median latency.</param>
/// <param name="ServerCores">The server's CPU time over the run's wall time (in cores, of the machine's).</param>
/// <param name="ClientCores">redis-benchmark's CPU time over the same wall time.</param>
internal sealed record ServerBenchmarkResult(string Server, string Test, int Pipeline, int ValueBytes,
    double OpsPerSecond, double P50Milliseconds, double ServerCores, double ClientCores)
{
    /// <summary>The round it was measured in (1 with one round).</summary>
    public int Round { get; init; } = 1;
}
