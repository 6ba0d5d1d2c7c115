using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using HybridKV.Benchmarks.Ycsb;

namespace HybridKV.Benchmarks;

/// <summary>
/// The YCSB runner's workloads as BenchmarkDotNet benchmarks: the same stores, streams and per-thread loops, 1M keys
/// preloaded, each invocation running <see cref="OperationsPerThread"/> operations on every thread, so the reported time
/// is per operation of one thread (throughput = threads / time). Rows are grouped by workload, HybridKV beside
/// ConcurrentDictionary; the YCSB runner (<c>-- ycsb</c>) reports the same comparison as ratios.
/// </summary>
[MemoryDiagnoser]
[GroupBenchmarksBy(BenchmarkLogicalGroupRule.ByParams)]
public class YcsbBenchmark
{
    private const long Keys = 1 << 20;
    private const int OperationsPerThread = 1 << 16;
    private const int StreamLength = 1 << 20;

    private IYcsbStore _store = null!;
    private IYcsbWorker[] _workers = null!;
    private YcsbStreams[] _streams = null!;
    private int _position;

    /// <summary>read:upsert:rmw:delete percentages.</summary>
    [Params("50:50:0:0", "100:0:0:0", "0:0:100:0", "0:100:0:0")]
    public string Mix { get; set; } = "50:50:0:0";

    [Params("uniform", "zipf")]
    public string Distribution { get; set; } = "uniform";

    [Params(1, 2)]
    public int Threads { get; set; } = 1;

    [Params("hybridkv", "concurrentdictionary")]
    public string Store { get; set; } = "hybridkv";

    [GlobalSetup]
    public void Setup()
    {
        var options = new YcsbStoreOptions(Keys, 8, Keys / 2, MemoryMb: null, Directory: string.Empty,
            CheckpointEvery: null, HybridKV.Checkpoints.CheckpointMode.FoldOver);
        _store = Store == "hybridkv" ? HybridKvYcsbStore.Create(options) : ConcurrentDictionaryYcsbStore.Create(options);
        _store.Load(Keys, Threads, _ => { });
        _workers = [.. Enumerable.Range(0, Threads).Select(_ => _store.CreateWorker())];
        _streams = YcsbStreams.PerThread(Distribution, Keys, YcsbMix.Parse(Mix), Threads, StreamLength);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        foreach (IYcsbWorker worker in _workers)
        {
            worker.Dispose();
        }

        _store.Dispose();
    }

    /// <summary>Every thread runs its stream from the same position, completing pending operations every batch.</summary>
    [Benchmark(OperationsPerInvoke = OperationsPerThread)]
    public long Run()
    {
        int start = _position;
        _position = (_position + OperationsPerThread) & (StreamLength - 1);
        if (Threads == 1)
        {
            return RunWorker(0, start);
        }

        long checksum = 0;
        Parallel.For(0, Threads, thread => Interlocked.Add(ref checksum, RunWorker(thread, start)));
        return checksum;
    }

    private long RunWorker(int thread, int start)
    {
        long checksum = 0;
        for (int done = 0; done < OperationsPerThread; done += YcsbRunner.Batch)
        {
            checksum += _workers[thread].Run(_streams[thread], start + done, YcsbRunner.Batch);
            _workers[thread].Complete(wait: false);
        }

        return checksum;
    }
}
