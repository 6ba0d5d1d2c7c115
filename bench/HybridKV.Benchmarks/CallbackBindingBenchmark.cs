using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Jobs;
using CountStore;
using HybridKV.Benchmarks.Callbacks;
using HybridKV.Sessions;

namespace HybridKV.Benchmarks;

/// <summary>
/// The same engine, workload and callback bodies bound three ways: the store generated from the CountStore sample's
/// <see cref="Counts"/> class (through its generated session), the hand-written struct (the baseline of each
/// category), and a struct that reaches the callbacks through an interface. One session, uniformly random keys,
/// <see cref="Batch"/> operations per invocation, 4K keys: the working set stays in cache, so the cost of a call shows
/// (with 1M keys each operation waits for memory, which hides it; docs/performance.md has such a run). Two jobs: the runtime's defaults, and dynamic PGO
/// switched off, which shows what the interface calls cost when the JIT cannot devirtualize them behind a type guard.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(WithAndWithoutPgo))]
[GroupBenchmarksBy(BenchmarkLogicalGroupRule.ByCategory)]
[CategoriesColumn]
public class CallbackBindingBenchmark
{
    private sealed class WithAndWithoutPgo : ManualConfig
    {
        public WithAndWithoutPgo()
        {
            Job measured = Job.Default.WithWarmupCount(3).WithIterationCount(15);
            AddJob(measured.WithId("DefaultPgo"));
            AddJob(measured.WithEnvironmentVariables(new EnvironmentVariable("DOTNET_TieredPGO", "0")).WithId("NoPgo"));
        }
    }

    private const int StreamLength = 1 << 20;
    private const int Batch = 4096;

    private Counts.Store _generatedStore = null!;
    private Counts.Session _generated = null!;
    private HybridKVStore<long, long, long, long, Empty, CountFunctions> _handWrittenStore = null!;
    private Session<long, long, long, long, Empty, CountFunctions> _handWritten = null!;
    private HybridKVStore<long, long, long, long, Empty, InterfaceCountFunctions> _interfaceStore = null!;
    private Session<long, long, long, long, Empty, InterfaceCountFunctions> _interface = null!;
    private long[] _keys = null!;
    private int _next;

    /// <summary>The number of distinct keys, all preloaded.</summary>
    [Params(1 << 12)]
    public int Keys { get; set; }

    private StoreSettings Settings => new()
    {
        IndexBuckets = Math.Max(Keys / 4, 64),
        PageSizeBits = 22,
        MemorySizeBytes = 1L << 28,
    };

    [GlobalSetup]
    public void Setup()
    {
        _generatedStore = new Counts.Store(Settings);
        _generated = _generatedStore.NewSession();
        _handWrittenStore = new HybridKVStore<long, long, long, long, Empty, CountFunctions>(Settings);
        _handWritten = _handWrittenStore.NewSession();
        _interfaceStore = new HybridKVStore<long, long, long, long, Empty, InterfaceCountFunctions>(
            Settings, InterfaceCountFunctions.Create());
        _interface = _interfaceStore.NewSession();
        for (long key = 0; key < Keys; key++)
        {
            _generated.Upsert(key, key);
            _handWritten.Upsert(key, key);
            _interface.Upsert(key, key);
        }

        var random = new Random(42);
        _keys = new long[StreamLength];
        for (int i = 0; i < _keys.Length; i++)
        {
            _keys[i] = random.NextInt64(Keys);
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _generated.Dispose();
        _generatedStore.Dispose();
        _handWritten.Dispose();
        _handWrittenStore.Dispose();
        _interface.Dispose();
        _interfaceStore.Dispose();
    }

    private int NextBatch()
    {
        int start = _next;
        _next = (_next + Batch) & (StreamLength - 1);
        return start;
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("RMW")]
    public void GeneratedRMW()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _generated.RMW(_keys[i], 1);
        }
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("RMW")]
    public void HandWrittenRMW()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _handWritten.RMW(_keys[i], 1);
        }
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("RMW")]
    public void InterfaceRMW()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _interface.RMW(_keys[i], 1);
        }
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("Read")]
    public long GeneratedRead()
    {
        long sum = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            long output = 0;
            _generated.Read(_keys[i], ref output);
            sum += output;
        }

        return sum;
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("Read")]
    public long HandWrittenRead()
    {
        long sum = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            long output = 0;
            _handWritten.Read(_keys[i], ref output);
            sum += output;
        }

        return sum;
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("Read")]
    public long InterfaceRead()
    {
        long sum = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            long output = 0;
            _interface.Read(_keys[i], ref output);
            sum += output;
        }

        return sum;
    }
}
