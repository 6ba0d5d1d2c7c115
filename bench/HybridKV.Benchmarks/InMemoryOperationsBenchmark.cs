using System.Collections.Concurrent;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using HybridKV.Benchmarks.Callbacks;
using HybridKV.Sessions;

namespace HybridKV.Benchmarks;

/// <summary>
/// One session doing Read, Upsert and RMW over 1M keys held in memory, beside ConcurrentDictionary&lt;long, long&gt;
/// on the same keys in the same order (the baseline of each category, so Ratio is HybridKV / ConcurrentDictionary).
/// Each invocation runs <see cref="Batch"/> operations on uniformly random keys. Both stores are safe for concurrent
/// use: HybridKV's callbacks are the CountStore sample's, with atomic in-place updates.
/// </summary>
[MemoryDiagnoser]
[GroupBenchmarksBy(BenchmarkLogicalGroupRule.ByCategory)]
[CategoriesColumn]
public class InMemoryOperationsBenchmark
{
    private const int Keys = 1 << 20;
    private const int Batch = 4096;

    private HybridKVStore<long, long, long, long, Empty, CountFunctions> _store = null!;
    private Session<long, long, long, long, Empty, CountFunctions> _session = null!;
    private ConcurrentDictionary<long, long> _dictionary = null!;
    private long[] _keys = null!;
    private int _next;

    [GlobalSetup]
    public void Setup()
    {
        _store = new HybridKVStore<long, long, long, long, Empty, CountFunctions>(new StoreSettings
        {
            IndexBuckets = Keys / 4,
            PageSizeBits = 22,
            MemorySizeBytes = 1L << 30,
        });
        _session = _store.NewSession();
        _dictionary = new ConcurrentDictionary<long, long>(concurrencyLevel: Environment.ProcessorCount, Keys);
        for (long key = 0; key < Keys; key++)
        {
            _session.Upsert(key, key);
            _dictionary[key] = key;
        }

        var random = new Random(42);
        _keys = new long[Keys];
        for (int i = 0; i < _keys.Length; i++)
        {
            _keys[i] = random.NextInt64(Keys);
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _session.Dispose();
        _store.Dispose();
    }

    private int NextBatch()
    {
        int start = _next;
        _next = (_next + Batch) & (Keys - 1);
        return start;
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("Read")]
    public long HybridKVRead()
    {
        long sum = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            long output = 0;
            _session.Read(_keys[i], ref output);
            sum += output;
        }

        return sum;
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("Read")]
    public long ConcurrentDictionaryRead()
    {
        long sum = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _dictionary.TryGetValue(_keys[i], out long output);
            sum += output;
        }

        return sum;
    }

    /// <summary>
    /// Reads whose key depends on the previous read's output (by a term that is always 0), so that no two lookups can
    /// overlap: the pure latency of one lookup, without the memory-level parallelism that independent reads enjoy.
    /// </summary>
    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("ReadDependent")]
    public long HybridKVReadDependent()
    {
        long output = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            long key = _keys[i] + (output >> 62);
            _session.Read(key, ref output);
        }

        return output;
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("ReadDependent")]
    public long ConcurrentDictionaryReadDependent()
    {
        long output = 0;
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _dictionary.TryGetValue(_keys[i] + (output >> 62), out output);
        }

        return output;
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("Upsert")]
    public void HybridKVUpsert()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _session.Upsert(_keys[i], i);
        }
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("Upsert")]
    public void ConcurrentDictionaryUpsert()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _dictionary[_keys[i]] = i;
        }
    }

    [Benchmark(OperationsPerInvoke = Batch), BenchmarkCategory("RMW")]
    public void HybridKVRMW()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            _session.RMW(_keys[i], 1);
        }
    }

    [Benchmark(OperationsPerInvoke = Batch, Baseline = true), BenchmarkCategory("RMW")]
    public void ConcurrentDictionaryRMW()
    {
        int start = NextBatch();
        for (int i = start; i < start + Batch; i++)
        {
            // Static lambdas with a state argument: no closure, no allocation per update.
            _dictionary.AddOrUpdate(_keys[i], static (_, add) => add, static (_, old, add) => old + add, 1L);
        }
    }
}
