using System.Globalization;
using System.Numerics;
using HybridKV.Checkpoints;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>The YCSB runner's command line, checked: every bad value names its option and what is allowed.</summary>
public sealed record YcsbOptions(
    IReadOnlyList<string> Stores,
    long Keys,
    IReadOnlyList<string> Distributions,
    IReadOnlyList<YcsbMix> Mixes,
    IReadOnlyList<int> ValueBytes,
    IReadOnlyList<int> Threads,
    int Seconds,
    long? MemoryMb,
    int? CheckpointEverySeconds,
    CheckpointMode? CheckpointMode,
    int Iterations,
    long? IndexBuckets,
    string Directory,
    string OutputDirectory,
    string? Scenario = null)
{
    /// <summary>HybridKV reads up to this many consecutive reads of a stream as one batch (1: one at a time).</summary>
    public int ReadBatch { get; init; } = 1;

    /// <summary>HybridKV prefetches the keys of each group of this many operations before running them (1: none).</summary>
    public int Prefetch { get; init; } = 1;

    /// <summary>HybridKV's <see cref="StoreSettings.LogSizeLimitRatio"/> (null: the library's default).</summary>
    public double? LogSizeLimitRatio { get; init; }

    /// <summary>The read cache HybridKV and FASTER get, in MiB (a power of two; null: none).</summary>
    public long? ReadCacheMb { get; init; }

    /// <summary>HybridKV's <see cref="StoreSettings.CopyHotReadsToTail"/> (<c>--copy-hot-reads</c>; default on, as the
    /// library ships).</summary>
    public bool CopyHotReads { get; init; } = true;

    /// <summary>FASTER copies every record its reads fetch from the device to the tail (<c>--peer-copy-reads</c>; default
    /// off, as FASTER ships and as its own benchmark runs).</summary>
    public bool PeerCopyReads { get; init; }

    /// <summary>HybridKV's own log lines at or above this level go to the console (<c>--store-log</c>; null: none).</summary>
    public Microsoft.Extensions.Logging.LogLevel? StoreLog { get; init; }

    /// <summary>
    /// Whether the peers' files go through the operating system's page cache (<c>--peer-page-cache</c>): on (the
    /// default), each peer as it ships (FASTER's own device, RocksDB's buffered reads); off, FASTER on HybridKV's
    /// direct-I/O file device and RocksDB with direct reads, flushes and compactions, so that every store has only its
    /// own memory budget. HybridKV's file device always uses direct I/O.
    /// </summary>
    public bool PeerPageCache { get; init; } = true;

    /// <summary>HybridKV's log device: file (default) or azure (page blobs; the connection string in the environment
    /// variable HYBRIDKV_AZURE_CONNECTION, for instance Azurite's).</summary>
    public string Device { get; init; } = "file";

    public const long SmallKeys = 2_500_000;
    public const long MediumKeys = 32_000_000;

    public static readonly string[] KnownStores = ["hybridkv", "hybridkv-varlen", "concurrentdictionary", "faster", "rocksdb"];

    public const string Usage = """
        ycsb [options]      YCSB workloads on HybridKV and its baselines in this process, the stores of a workload open
                            side by side and their measured iterations alternated
          --store LIST            hybridkv,hybridkv-varlen,concurrentdictionary,faster,rocksdb
                                  (default hybridkv,concurrentdictionary; hybridkv-varlen keeps values as byte sequences;
                                  faster is Microsoft.FASTER.Core 2.6.5, rocksdb the RocksDB binding, bench/README.md)
          --profile small|medium  2.5M or 32M keys (default small)
          --keys N                keys to preload (overrides --profile)
          --dist LIST             uniform,zipf (zipf: theta 0.99, ranks scrambled; default both)
          --mix LIST              read:upsert:rmw:delete percentages (default 50:50:0:0,100:0:0:0,0:0:100:0,0:100:0:0)
          --value-bytes LIST      8,100 (default 8)
          --threads LIST          threads running operations (default 1,2)
          --seconds S             length of one iteration (default 10)
          --iterations K          iterations per store and workload; the median is reported (default 3)
          --memory-mb M           HybridKV's log memory; the rest goes to a file device (default: all in memory);
                                  FASTER's log memory and RocksDB's block cache are the same size (in memory: the
                                  runner's sizing of HybridKV's log, twice its records, at least 64 MiB);
                                  HybridKV's pages are 4 MiB, or an eighth of the memory when it is under 32 MiB
          --log-size-limit-ratio R  soak: writers wait for compaction above R times the live data (default: the
                                  library's, StoreSettings.LogSizeLimitRatio)
          --read-cache-mb M       a read cache of M MiB (a power of two) for hybridkv and faster, besides the log
                                  memory (default: none)
          --peer-page-cache on|off  on (default): faster and rocksdb as they ship, reading through the OS page cache;
                                  off: faster on HybridKV's direct-I/O file device, rocksdb with direct I/O
          --checkpoint-every S    a checkpoint every S seconds: HybridKV's periodic CPR checkpoint, FASTER's
                                  TakeHybridLogCheckpointAsync, RocksDB's Checkpoint (memtables flushed)
          --checkpoint-mode M     foldover|snapshot|auto (default: the library's, StoreSettings.PeriodicCheckpointMode);
                                  FASTER has no auto: it then takes snapshots with --memory-mb, fold-overs without
          --scenario NAME         checkpoint-soak: each workload on each --store (default hybridkv; faster and
                                  rocksdb too, not concurrentdictionary) without and then with periodic
                                  checkpoints (--checkpoint-every, default 2), all else at the library's defaults;
                                  ends with RESULT scenario=checkpoint-soak store=NAME ratio=R checkpoints=N
                                  slowest_second_ops_per_sec=S (R = with / without, S = the worst second with)
                                  soak: a fixed key set updated on two hybridkv stores, without and with log
                                  compaction, their iterations alternated (the library's policy; segments a
                                  sixteenth of the live data; memory --memory-mb,
                                  default a quarter of the data); ends with RESULT scenario=soak live_bytes=L peak_disk_bytes=P
                                  disk_ratio=P/L throughput_ratio=with/without written_ratio=log written/L
          --index-buckets N       hash buckets, a power of two (default #keys/2 rounded up)
          --prefetch N            HybridKV runs each group of N operations (any mix) after Session.Prefetch of their
                                  keys, overlapping their cache misses (default 1: no prefetch; 32 covers memory latency)
          --read-batch N          HybridKV reads up to N consecutive reads as one batch, overlapping their cache
                                  misses (Session.Read of a span of keys; default 1: one read at a time); with
                                  --prefetch, a group of reads only is read as a batch, without Session.Prefetch
          --copy-hot-reads on|off HybridKV copies records read from the device twice lately to the tail
                                  (StoreSettings.CopyHotReadsToTail; default on, as the library ships)
          --peer-copy-reads on|off FASTER copies every record read from the device to the tail (its ReadCopyOptions
                                  Device to MainLog; default off, as FASTER ships)
          --store-log LEVEL       HybridKV's own log lines (checkpoint phases, compactions) at or above LEVEL
                                  (Trace, Debug, Information, Warning, Error) to the console (default: none)
          --device file|azure     HybridKV's log device: file (default), or azure: page blobs in a new container, through
                                  the connection string in HYBRIDKV_AZURE_CONNECTION (Azurite's, for a local measure)
          --dir DIR               files of the device and checkpoints (default BenchmarkDotNet.Artifacts/ycsb/data)
          --out DIR               CSV, JSON and PNG charts (default BenchmarkDotNet.Artifacts/ycsb)
        """;

    public long EffectiveIndexBuckets =>
        IndexBuckets ?? (long)BitOperations.RoundUpToPowerOf2((ulong)Math.Max(64, Keys / 2));

    public static YcsbOptions Parse(string[] args)
    {
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Length; i++)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Length)
            {
                throw new ArgumentException($"Expected '--option value', got '{args[i]}'.", nameof(args));
            }

            values[args[i]] = args[++i];
        }

        string[] known =
        [
            "--store", "--profile", "--keys", "--dist", "--mix", "--value-bytes", "--threads", "--seconds",
            "--iterations", "--memory-mb", "--checkpoint-every", "--checkpoint-mode", "--index-buckets", "--read-batch", "--prefetch", "--dir", "--out",
            "--scenario", "--peer-page-cache", "--read-cache-mb", "--log-size-limit-ratio", "--device",
            "--copy-hot-reads", "--peer-copy-reads", "--store-log",
        ];
        foreach (string name in values.Keys.Where(name => !known.Contains(name)))
        {
            throw new ArgumentException($"Unknown option {name}.", nameof(args));
        }

        string? Text(string name) => values.GetValueOrDefault(name);
        string[] List(string name, string fallback) =>
            (Text(name) ?? fallback).Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

        // A checkpoint scenario compares each store with itself: by default HybridKV alone.
        string[] stores = List("--store", Text("--scenario") == "checkpoint-soak" ? "hybridkv" : "hybridkv,concurrentdictionary");
        if (Text("--scenario") == "checkpoint-soak" && stores.FirstOrDefault(store => store == "concurrentdictionary") is { } plain)
        {
            throw new ArgumentException($"--store '{plain}' takes no checkpoints; --scenario checkpoint-soak needs " +
                "hybridkv, hybridkv-varlen, faster or rocksdb.", nameof(args));
        }

        foreach (string store in stores.Where(store => !KnownStores.Contains(store)))
        {
            throw new ArgumentException($"--store '{store}' is not one of {string.Join(", ", KnownStores)}.", nameof(args));
        }

        string profile = Text("--profile") ?? "small";
        long keys = profile switch
        {
            "small" => SmallKeys,
            "medium" => MediumKeys,
            _ => throw new ArgumentException($"--profile '{profile}' must be small or medium.", nameof(args)),
        };
        keys = Number("--keys", Text("--keys"), keys, 1, 1L << 34);

        string[] distributions = List("--dist", "uniform,zipf");
        foreach (string distribution in distributions.Where(d => d is not ("uniform" or "zipf")))
        {
            throw new ArgumentException($"--dist '{distribution}' must be uniform or zipf.", nameof(args));
        }

        string? scenarioName = Text("--scenario");
        YcsbMix[] mixes = [.. List("--mix", scenarioName == "soak" ? "0:100:0:0" : "50:50:0:0,100:0:0:0,0:0:100:0,0:100:0:0")
            .Select(YcsbMix.Parse)];
        int[] valueBytes = [.. List("--value-bytes", "8").Select(v => (int)Number("--value-bytes", v, 8, 8, 100))];
        foreach (int size in valueBytes.Where(size => size is not (8 or 100)))
        {
            throw new ArgumentException($"--value-bytes {size} must be 8 or 100.", nameof(args));
        }

        int[] threads = [.. List("--threads", "1,2").Select(t => (int)Number("--threads", t, 1, 1, 64))];
        CheckpointMode? checkpointMode = Text("--checkpoint-mode") switch
        {
            null => null,
            "foldover" => HybridKV.Checkpoints.CheckpointMode.FoldOver,
            "snapshot" => HybridKV.Checkpoints.CheckpointMode.Snapshot,
            "auto" => HybridKV.Checkpoints.CheckpointMode.Auto,
            string mode => throw new ArgumentException(
                $"--checkpoint-mode '{mode}' must be foldover, snapshot or auto.", nameof(args)),
        };
        string? scenario = Text("--scenario");
        if (scenario is not (null or "checkpoint-soak" or "soak"))
        {
            throw new ArgumentException($"--scenario '{scenario}' must be checkpoint-soak or soak.", nameof(args));
        }

        long? indexBuckets = Text("--index-buckets") is { } bucketText
            ? Number("--index-buckets", bucketText, 0, StoreSettings.MinIndexBuckets, StoreSettings.MaxIndexBuckets)
            : null;
        if (indexBuckets is { } buckets && !BitOperations.IsPow2(buckets))
        {
            throw new ArgumentException($"--index-buckets {buckets} must be a power of two.", nameof(args));
        }

        string artifacts = Path.GetFullPath(Path.Combine("BenchmarkDotNet.Artifacts", "ycsb"));
        return new YcsbOptions(
            stores,
            keys,
            distributions,
            mixes,
            valueBytes,
            threads,
            (int)Number("--seconds", Text("--seconds"), 10, 1, 3600),
            Text("--memory-mb") is { } memory ? Number("--memory-mb", memory, 0, 1, 1 << 20) : null,
            Text("--checkpoint-every") is { } every ? (int)Number("--checkpoint-every", every, 0, 1, 3600)
                : scenario == "checkpoint-soak" ? 2 : null,
            checkpointMode,
            (int)Number("--iterations", Text("--iterations"), 3, 1, 100),
            indexBuckets,
            Path.GetFullPath(Text("--dir") ?? Path.Combine(artifacts, "data")),
            Path.GetFullPath(Text("--out") ?? artifacts),
            scenario)
        {
            ReadBatch = (int)Number("--read-batch", Text("--read-batch"), 1, 1, 4096),
            Prefetch = (int)Number("--prefetch", Text("--prefetch"), 1, 1, 4096),
            LogSizeLimitRatio = Text("--log-size-limit-ratio") is { } limit
                ? double.TryParse(limit, NumberStyles.Float, CultureInfo.InvariantCulture, out double ratio) && ratio >= 1.25 && ratio <= 1000
                    ? ratio
                    : throw new ArgumentException($"--log-size-limit-ratio '{limit}' must be a number from 1.25 to 1000.", nameof(args))
                : null,
            ReadCacheMb = Text("--read-cache-mb") is { } cache ? PowerOfTwo("--read-cache-mb", Number("--read-cache-mb", cache, 0, 1, 1 << 16)) : null,
            PeerPageCache = OnOff("--peer-page-cache", Text("--peer-page-cache"), true),
            CopyHotReads = OnOff("--copy-hot-reads", Text("--copy-hot-reads"), true),
            PeerCopyReads = OnOff("--peer-copy-reads", Text("--peer-copy-reads"), false),
            StoreLog = Text("--store-log") is { } level
                ? Enum.TryParse(level, ignoreCase: true, out Microsoft.Extensions.Logging.LogLevel parsed) && parsed != Microsoft.Extensions.Logging.LogLevel.None
                    ? parsed
                    : throw new ArgumentException($"--store-log '{level}' must be Trace, Debug, Information, Warning or Error.", nameof(args))
                : null,
            Device = Text("--device") switch
            {
                null or "file" => "file",
                "azure" => "azure",
                string value => throw new ArgumentException($"--device '{value}' must be file or azure.", nameof(args)),
            },
        };
    }

    private static bool OnOff(string name, string? text, bool byDefault) => text switch
    {
        null => byDefault,
        "on" => true,
        "off" => false,
        _ => throw new ArgumentException($"{name} '{text}' must be on or off.", nameof(text)),
    };

    private static long PowerOfTwo(string name, long value) => BitOperations.IsPow2(value) ? value
        : throw new ArgumentException($"{name} {value} must be a power of two.", nameof(name));

    private static long Number(string name, string? text, long fallback, long min, long max)
    {
        if (text is null)
        {
            return fallback;
        }

        if (!long.TryParse(text, NumberStyles.AllowThousands, CultureInfo.InvariantCulture, out long value) ||
            value < min || value > max)
        {
            throw new ArgumentException($"{name} '{text}' must be a whole number from {min} to {max}.", nameof(name));
        }

        return value;
    }
}
