using System.Diagnostics;
using System.Globalization;

namespace HybridKV.Benchmarks.Server;

/// <summary>One redis-benchmark run of one test against a server, its CSV output parsed.</summary>
internal static partial class RedisBenchmarkRun
{
    public static ServerBenchmarkResult Run(ServerUnderTest server, ServerBenchmarkOptions options, string test,
        int pipeline, int valueBytes)
    {
        var start = new ProcessStartInfo("redis-benchmark")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (string argument in new[]
                 {
                     "-h", "127.0.0.1", "-p", server.Port.ToString(CultureInfo.InvariantCulture),
                     "-t", test, "-n", options.Requests.ToString(CultureInfo.InvariantCulture),
                     "-r", options.KeySpace.ToString(CultureInfo.InvariantCulture),
                     "-c", options.Clients.ToString(CultureInfo.InvariantCulture),
                     "-P", pipeline.ToString(CultureInfo.InvariantCulture),
                     "-d", valueBytes.ToString(CultureInfo.InvariantCulture),
                     "--csv",
                 })
        {
            start.ArgumentList.Add(argument);
        }

        TimeSpan serverCpuBefore = server.CpuTime;
        TimeSpan childrenCpuBefore = ChildrenCpuTime();
        var clock = Stopwatch.StartNew();
        using Process process = Process.Start(start)!;
        Task<string> errors = process.StandardError.ReadToEndAsync();
        string output = process.StandardOutput.ReadToEnd();
        process.WaitForExit();
        TimeSpan elapsed = clock.Elapsed;
        double serverCores = (server.CpuTime - serverCpuBefore) / elapsed;
        // The client's CPU time, once it has exited and been waited for: what the runner's children used meanwhile.
        double clientCores = (ChildrenCpuTime() - childrenCpuBefore) / elapsed;
        if (process.ExitCode != 0)
        {
            throw new InvalidOperationException($"redis-benchmark failed ({process.ExitCode}): {errors.Result}");
        }

        // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
        foreach (string line in output.Split('\n'))
        {
            string[] fields = line.Trim().Split(',').Select(f => f.Trim('"')).ToArray();
            if (fields.Length >= 5 && fields[0] != "test" &&
                double.TryParse(fields[1], NumberStyles.Float, CultureInfo.InvariantCulture, out double rps))
            {
                double p50 = double.Parse(fields[4], NumberStyles.Float, CultureInfo.InvariantCulture);
                return new ServerBenchmarkResult(server.Name, fields[0], pipeline, valueBytes, rps, p50, serverCores, clientCores);
            }
        }

        throw new InvalidOperationException($"No result in redis-benchmark's output: {output}{errors.Result}");
    }

    /// <summary>The CPU time of the runner's children that exited and were waited for (getrusage RUSAGE_CHILDREN).</summary>
    private static TimeSpan ChildrenCpuTime()
    {
        // struct rusage starts with ru_utime and ru_stime, two struct timeval {long sec; long usec;}; 18 longs in all.
        Span<long> usage = stackalloc long[18];
        if (GetRUsage(-1, ref usage[0]) != 0)
        {
            return TimeSpan.Zero;
        }

        long microseconds = ((usage[0] + usage[2]) * 1_000_000) + usage[1] + usage[3];
        return TimeSpan.FromMicroseconds(microseconds);
    }

    [System.Runtime.InteropServices.LibraryImport("libc", EntryPoint = "getrusage")]
    private static partial int GetRUsage(int who, ref long usage);
}
