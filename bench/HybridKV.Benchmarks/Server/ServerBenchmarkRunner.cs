using System.Globalization;
using System.Text;

namespace HybridKV.Benchmarks.Server;

/// <summary>
/// <c>server</c>: starts the servers (HybridKV's, Garnet, redis-server), each on a free loopback port, and runs the
/// same redis-benchmark commands against each, one server after the other for each test, pipeline depth and value size
/// (with --rounds, every line again each round, the servers' order rotated). Prints
/// <c>RESULT server=S test=T pipeline=P value_bytes=V ops_per_sec=X</c> lines, a table with HybridKV's ratio to each
/// peer, and writes a CSV and a PNG chart. Client and server share the machine's cores, as in issue 23.
/// </summary>
internal static class ServerBenchmarkRunner
{
    public static int Run(string[] args)
    {
        ServerBenchmarkOptions options = ServerBenchmarkOptions.Parse(args);
        Console.WriteLine($"server benchmark: {string.Join(',', options.Servers)}; tests {string.Join(',', options.Tests)}; " +
                          $"pipeline {string.Join(',', options.Pipelines)}; value bytes {string.Join(',', options.ValueBytes)}; " +
                          $"{options.Clients} clients; {options.Requests} requests ({options.WarmupRequests} to warm up); " +
                          $"{options.KeySpace} keys; " +
                          $"{Environment.ProcessorCount} cores; load {LoadAverage()}");
        var results = new List<ServerBenchmarkResult>();
        foreach (int valueBytes in options.ValueBytes)
        {
            // Every server at once, fresh per value size (the keys of one size do not carry over into the next), and
            // each line run against them one after the other: on a machine whose speed drifts over minutes, running
            // one server's lines together put the drift on that server (bench/README.md). An idle server waits in
            // epoll and costs the others nothing measurable.
            var servers = new List<ServerUnderTest>();
            try
            {
                foreach (string name in options.Servers)
                {
                    servers.Add(ServerUnderTest.Start(name, options));
                }

                if (options.WarmupRequests > 0)
                {
                    foreach (ServerUnderTest server in servers)
                    {
                        foreach (string test in options.Tests)
                        {
                            RedisBenchmarkRun.Run(server, options with { Requests = options.WarmupRequests }, test,
                                options.Pipelines.Max(), valueBytes);
                        }
                    }
                }

                for (int round = 1; round <= options.Rounds; round++)
                {
                    foreach (int pipeline in options.Pipelines)
                    {
                        foreach (string test in options.Tests)
                        {
                            // Rotated each round, so that no server always runs first (or right after another's line).
                            for (int i = 0; i < servers.Count; i++)
                            {
                                ServerUnderTest server = servers[(i + round - 1) % servers.Count];
                                ServerBenchmarkResult result = RedisBenchmarkRun.Run(server, options, test, pipeline, valueBytes)
                                    with { Round = round };
                                results.Add(result);
                                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                                    $"{(options.Rounds == 1 ? "RESULT" : $"ROUND {round}:")} server={result.Server} test={result.Test} " +
                                    $"pipeline={pipeline} value_bytes={valueBytes} ops_per_sec={result.OpsPerSecond:F0} " +
                                    $"p50_ms={result.P50Milliseconds:F3} server_cores={result.ServerCores:F2} " +
                                    $"client_cores={result.ClientCores:F2}"));
                            }
                        }
                    }
                }
            }
            finally
            {
                foreach (ServerUnderTest server in servers)
                {
                    server.Dispose();
                }
            }
        }

        Console.WriteLine($"load after: {LoadAverage()}");
        IReadOnlyList<ServerBenchmarkResult> medians = options.Rounds == 1 ? results : Medians(results);
        if (options.Rounds > 1)
        {
            foreach (ServerBenchmarkResult median in medians)
            {
                double[] rounds = [.. results.Where(r => SameLine(r, median)).Select(r => r.OpsPerSecond)];
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"RESULT server={median.Server} test={median.Test} pipeline={median.Pipeline} " +
                    $"value_bytes={median.ValueBytes} ops_per_sec={median.OpsPerSecond:F0} p50_ms={median.P50Milliseconds:F3} " +
                    $"server_cores={median.ServerCores:F2} client_cores={median.ClientCores:F2} rounds={rounds.Length} " +
                    $"min={rounds.Min():F0} max={rounds.Max():F0}"));
            }
        }

        WriteTable(medians);
        Directory.CreateDirectory(options.ResultsDirectory);
        string stem = Path.Combine(options.ResultsDirectory,
            "server-" + DateTime.UtcNow.ToString("HHmmss", CultureInfo.InvariantCulture));
        File.WriteAllText(stem + ".csv", Csv(results));
        Console.WriteLine($"results: {stem}.csv");
        try
        {
            Console.WriteLine($"chart: {ServerBenchmarkChart.Write(stem + ".png", medians)}");
        }
        catch (Exception error) when (error is TypeInitializationException or DllNotFoundException)
        {
            // The chart needs SkiaSharp's native library and a font; the results above do not.
            Console.WriteLine($"no chart: {error.Message}");
        }

        return 0;
    }

    /// <summary>Each server's line at its median over the rounds (the round whose requests per second are the median;
    /// with an even count, the lower of the two middle ones), so that its latency and CPU figures belong to it.</summary>
    private static List<ServerBenchmarkResult> Medians(IReadOnlyList<ServerBenchmarkResult> results) =>
        [.. results.GroupBy(r => (r.Server, r.Test, r.Pipeline, r.ValueBytes))
            .Select(line =>
            {
                ServerBenchmarkResult[] sorted = [.. line.OrderBy(r => r.OpsPerSecond)];
                return sorted[(sorted.Length - 1) / 2];
            })];

    private static bool SameLine(ServerBenchmarkResult a, ServerBenchmarkResult b) =>
        (a.Server, a.Test, a.Pipeline, a.ValueBytes) == (b.Server, b.Test, b.Pipeline, b.ValueBytes);

    private static void WriteTable(IReadOnlyList<ServerBenchmarkResult> results)
    {
        var table = new StringBuilder();
        table.AppendLine(CultureInfo.InvariantCulture,
            $"{"test",-6} {"pipeline",8} {"bytes",6} {"hybridkv",12} {"garnet",12} {"redis",12} {"vs garnet",10} {"vs redis",9} {"hkv cpu",8}");
        foreach (IGrouping<(string Test, int Pipeline, int ValueBytes), ServerBenchmarkResult> line in
                 results.GroupBy(r => (r.Test, r.Pipeline, r.ValueBytes)))
        {
            double Ops(string server) => line.FirstOrDefault(r => r.Server == server)?.OpsPerSecond ?? 0;
            double hybridkv = Ops("hybridkv");
            string Ratio(double peer) => hybridkv > 0 && peer > 0 ? (hybridkv / peer).ToString("F2", CultureInfo.InvariantCulture) + "x" : "-";
            double cores = line.FirstOrDefault(r => r.Server == "hybridkv")?.ServerCores ?? 0;
            table.AppendLine(CultureInfo.InvariantCulture,
                $"{line.Key.Test,-6} {line.Key.Pipeline,8} {line.Key.ValueBytes,6} {hybridkv,12:F0} {Ops("garnet"),12:F0} " +
                $"{Ops("redis"),12:F0} {Ratio(Ops("garnet")),10} {Ratio(Ops("redis")),9} {cores,8:F2}");
        }

        Console.Write(table);
    }

    private static string Csv(IReadOnlyList<ServerBenchmarkResult> results)
    {
        var csv = new StringBuilder("server,test,pipeline,value_bytes,round,ops_per_sec,p50_ms,server_cores,client_cores\n");
        foreach (ServerBenchmarkResult r in results)
        {
            csv.AppendLine(CultureInfo.InvariantCulture,
                $"{r.Server},{r.Test},{r.Pipeline},{r.ValueBytes},{r.Round},{r.OpsPerSecond:F0},{r.P50Milliseconds:F3},{r.ServerCores:F2},{r.ClientCores:F2}");
        }

        return csv.ToString();
    }

    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? File.ReadAllText("/proc/loadavg").Trim() : "unknown";
}
