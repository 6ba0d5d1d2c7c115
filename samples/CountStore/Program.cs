using System.Diagnostics;
using System.Text;
using CountStore;
using HybridKV;

// Counts how often each key occurs, with one RMW per occurrence, on two sessions in parallel, then prints the most
// frequent keys. With a file argument the keys are its words; without one, a skewed (Zipf-like) stream is generated.
const int TopCount = 10;
(long[] stream, Dictionary<long, string> names) = args.Length > 0 ? ReadWords(args[0]) : Generate(2_000_000, 100_000);

var settings = new StoreSettings
{
    IndexBuckets = 1L << 16,
    PageSizeBits = 20,
    MemorySizeBytes = 1L << 26,
};
using var store = new Counts.Store(settings);

var clock = Stopwatch.StartNew();
int sessions = Math.Max(2, Environment.ProcessorCount);
int share = (stream.Length + sessions - 1) / sessions;
Parallel.For(0, sessions, part =>
{
    using var session = store.NewSession();
    int end = Math.Min(stream.Length, (part + 1) * share);
    for (int i = part * share; i < end; i++)
    {
        session.RMW(stream[i], 1);
    }

    session.CompletePending(wait: true);
});
clock.Stop();

using var reader = store.NewSession();
var counts = new List<(long Key, long Count)>(names.Count);
foreach (long key in names.Keys)
{
    long count = 0;
    if (reader.Read(key, ref count) == Status.Ok)
    {
        counts.Add((key, count));
    }
}

Console.WriteLine(
    $"Counted {stream.Length:N0} occurrences of {counts.Count:N0} distinct keys on {sessions} sessions in " +
    $"{clock.Elapsed.TotalMilliseconds:N0} ms ({stream.Length / clock.Elapsed.TotalSeconds / 1e6:N1} M RMW/s).");
Console.WriteLine($"Log: {store.TailAddress:N0} bytes written, read-only below {store.ReadOnlyAddress:N0}.");
Console.WriteLine($"Top {TopCount}:");
foreach ((long key, long count) in counts.OrderByDescending(c => c.Count).ThenBy(c => names[c.Key]).Take(TopCount))
{
    Console.WriteLine($"  {names[key],-24} {count,12:N0}");
}

long total = counts.Sum(c => c.Count);
if (total != stream.Length)
{
    Console.Error.WriteLine($"Counts add up to {total:N0}, expected {stream.Length:N0}.");
    return 1;
}

return 0;

static (long[] Stream, Dictionary<long, string> Names) ReadWords(string path)
{
    var names = new Dictionary<long, string>();
    var stream = new List<long>();
    foreach (string line in File.ReadLines(path))
    {
        foreach (string word in line.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries))
        {
            string normalized = word.Trim().ToLowerInvariant();
            long key = KeyHashing.HashSpan(Encoding.UTF8.GetBytes(normalized));
            names.TryAdd(key, normalized);
            stream.Add(key);
        }
    }

    return (stream.ToArray(), names);
}

static (long[] Stream, Dictionary<long, string> Names) Generate(int occurrences, int distinct)
{
    // Rank r is drawn with probability proportional to 1 / r (a Zipf distribution with exponent 1).
    var random = new Random(2018);
    double[] cumulative = new double[distinct];
    double sum = 0;
    for (int rank = 0; rank < distinct; rank++)
    {
        sum += 1.0 / (rank + 1);
        cumulative[rank] = sum;
    }

    var stream = new long[occurrences];
    for (int i = 0; i < occurrences; i++)
    {
        int rank = Array.BinarySearch(cumulative, random.NextDouble() * sum);
        stream[i] = rank < 0 ? ~rank : rank;
    }

    var names = Enumerable.Range(0, distinct).ToDictionary(rank => (long)rank, rank => $"key-{rank}");
    return (stream, names);
}
