using System.Globalization;

namespace HybridKV.Benchmarks.Server;

/// <summary>The options of <c>server</c>: which servers, which redis-benchmark runs.</summary>
internal sealed record ServerBenchmarkOptions
{
    public string[] Servers { get; init; } = ["hybridkv", "garnet", "redis"];

    public int[] Pipelines { get; init; } = [1, 16];

    public int[] ValueBytes { get; init; } = [8, 100];

    public string[] Tests { get; init; } = ["set", "get", "incr"];

    public int Clients { get; init; } = 50;

    public int Requests { get; init; } = 500_000;

    /// <summary>
    /// How many times every line runs against every server, the servers' order rotated each round; RESULT lines and
    /// the table give each line's median. On a machine whose speed swings by a third between neighbouring lines, one
    /// round says little about a ratio near 1.
    /// </summary>
    public int Rounds { get; init; } = 1;

    /// <summary>
    /// Requests of every test run against each fresh server before it is measured, the same for every server: the
    /// first requests pay for page faults on new memory, and on .NET for the JIT's first tiers.
    /// </summary>
    public int WarmupRequests { get; init; } = 300_000;

    /// <summary>redis-benchmark's -r: keys are drawn from this many.</summary>
    public int KeySpace { get; init; } = 1_000_000;

    /// <summary>Where Garnet is installed (by install-garnet.sh when missing).</summary>
    public string GarnetToolPath { get; init; } = Path.Combine(RepositoryRoot(), "bench", ".tools", "garnet");

    /// <summary>Where the CSV and the chart go.</summary>
    public string ResultsDirectory { get; init; } =
        Path.Combine(RepositoryRoot(), "bench", "results", DateTime.UtcNow.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture));

    public static ServerBenchmarkOptions Parse(string[] args)
    {
        var options = new ServerBenchmarkOptions();
        for (int i = 0; i < args.Length; i++)
        {
            string value = i + 1 < args.Length ? args[i + 1] : throw new ArgumentException($"{args[i]} needs a value.");
            options = args[i++] switch
            {
                "--servers" => options with { Servers = value.Split(',') },
                "--pipeline" => options with { Pipelines = Ints(value) },
                "--value-bytes" => options with { ValueBytes = Ints(value) },
                "--tests" => options with { Tests = value.Split(',') },
                "--clients" => options with { Clients = int.Parse(value, CultureInfo.InvariantCulture) },
                "--requests" => options with { Requests = int.Parse(value, CultureInfo.InvariantCulture) },
                "--rounds" => options with { Rounds = Positive("--rounds", value) },
                "--warmup-requests" => options with { WarmupRequests = int.Parse(value, CultureInfo.InvariantCulture) },
                "--keyspace" => options with { KeySpace = int.Parse(value, CultureInfo.InvariantCulture) },
                "--garnet-tool-path" => options with { GarnetToolPath = value },
                "--results" => options with { ResultsDirectory = value },
                _ => throw new ArgumentException(
                    $"Unknown option {args[i - 1]}. Options: --servers hybridkv,garnet,redis --pipeline 1,16 " +
                    "--value-bytes 8,100 --tests set,get,incr --clients 50 --requests N --rounds N --warmup-requests N --keyspace N " +
                    "--garnet-tool-path DIR --results DIR"),
            };
        }

        return options;
    }

    private static int Positive(string name, string value) =>
        int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int number) && number > 0
            ? number
            : throw new ArgumentException($"{name} is '{value}': it must be a whole number of at least 1.", nameof(value));

    private static int[] Ints(string value) => [.. value.Split(',').Select(v => int.Parse(v, CultureInfo.InvariantCulture))];

    /// <summary>The repository's root: the directory above bench/ that holds Store.sln.</summary>
    public static string RepositoryRoot()
    {
        for (DirectoryInfo? directory = new(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Store.sln")))
            {
                return directory.FullName;
            }
        }

        return Directory.GetCurrentDirectory();
    }
}
