using System.Diagnostics;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// One store under one workload: created and loaded, warmed up, measured an iteration at a time, then verified.
/// Runs side by side with the other stores of its workload (or, in the checkpoint-soak scenario, with the same store
/// without checkpoints), their iterations alternated.
/// </summary>
internal sealed class YcsbStoreRun : IDisposable
{
    private readonly YcsbOptions _options;
    private readonly string _storeName;
    private readonly YcsbMix _mix;
    private readonly string _distribution;
    private readonly int _valueBytes;
    private readonly int _threads;
    private readonly YcsbStreams[] _streams;
    private readonly bool? _compaction;
    private readonly long _liveBytes;
    private readonly string _label;
    private readonly IYcsbStore _store;
    private readonly double _loadSeconds;
    private readonly IYcsbWorker[] _workers;
    private readonly YcsbVerifier _verifier;
    private readonly List<double> _throughput = [];
    private readonly List<IReadOnlyList<double>> _intervals = [];
    private long _totalOperations;
    private long _totalAllocated;
    private double _iterationOperations;
    private double _iterationSeconds;
    private long _iterationAllocated;
    private long _iterationCounted;
    private List<double> _iterationSeries = [];
    private long _checkpointsBefore;
    private bool _workersDisposed;

    public YcsbStoreRun(YcsbOptions options, string storeName, YcsbMix mix, string distribution, int valueBytes,
        int threads, YcsbStreams[] streams, bool? compaction)
    {
        _options = options;
        _storeName = storeName;
        _mix = mix;
        _distribution = distribution;
        _valueBytes = valueBytes;
        _threads = threads;
        _streams = streams;
        _compaction = compaction;
        _liveBytes = options.Keys * HybridKvYcsbStore.RecordBytes(valueBytes);
        var storeOptions = new YcsbStoreOptions(options.Keys, valueBytes, options.EffectiveIndexBuckets,
            // The soak runs larger than memory unless told otherwise: updates append, and the log grows.
            options.MemoryMb ?? (compaction is null ? null
                : (long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)Math.Max(8, (_liveBytes / 4) >> 20))),
            // The soak's and the checkpoint soak's two stores are open at once.
            Path.Combine(options.Directory, compaction is false ? storeName + "-without-compaction"
                : options.Scenario == "checkpoint-soak" && options.CheckpointEverySeconds is null ? storeName + "-without-checkpoints"
                : storeName),
            options.CheckpointEverySeconds is { } every ? TimeSpan.FromSeconds(every) : null, options.CheckpointMode)
        {
            LogCompactionRatio = compaction is false ? 0 : null,
            LogSizeLimitRatio = options.LogSizeLimitRatio,
            ReadBatch = options.ReadBatch,
            Prefetch = options.Prefetch,
            ReadCacheMb = options.ReadCacheMb,
            CopyHotReads = options.CopyHotReads,
            PeerCopyReads = options.PeerCopyReads,
            StoreLog = options.StoreLog,
            Device = options.Device,
            AzureContainer = $"ycsb-{Guid.NewGuid():N}",
            // Disk follows the live data by whole segments: a sixteenth of the live data, from one page to 1 GiB.
            SegmentBytes = compaction is null ? 1L << 30
                : Math.Clamp((long)System.Numerics.BitOperations.RoundUpToPowerOf2((ulong)(_liveBytes / 16)), 1L << 22, 1L << 30),
        };
        _label = $"{storeName} {mix}/{distribution}/{valueBytes} threads={threads}" +
            (compaction is { } compacting ? compacting ? " with compaction" : " without compaction"
                : options.Scenario is null ? "" : options.CheckpointEverySeconds is { } seconds ? $" checkpoints every {seconds} s" : " no checkpoints");
        Console.WriteLine($"{_label}: loading {options.Keys:N0} keys");
        _store = storeName switch
        {
            "hybridkv" => HybridKvYcsbStore.Create(storeOptions),
            "hybridkv-varlen" => HybridKvYcsbStore.Create(storeOptions, variableLength: true),
            "faster" => FasterYcsbStore.Create(storeOptions, options.PeerPageCache),
            "rocksdb" => RocksDbYcsbStore.Create(storeOptions, options.PeerPageCache),
            _ => ConcurrentDictionaryYcsbStore.Create(storeOptions),
        };

        try
        {
            var load = Stopwatch.StartNew();
            long lastReport = 0;
            _store.Load(options.Keys, threads, loaded =>
            {
                long second = (long)load.Elapsed.TotalSeconds;
                if (second > Interlocked.Exchange(ref lastReport, second) || loaded == options.Keys)
                {
                    Console.WriteLine($"  loaded {loaded:N0} of {options.Keys:N0} keys, {load.Elapsed.TotalSeconds:F1} s");
                }
            });
            _loadSeconds = load.Elapsed.TotalSeconds;
            _workers = [.. Enumerable.Range(0, threads).Select(_ => _store.CreateWorker())];
            _verifier = new YcsbVerifier(streams, threads, options.Keys);
        }
        catch
        {
            _store.Dispose();
            throw;
        }
    }

    /// <summary>Not recorded: lets the JIT reach its optimised code and the caches fill before the first
    /// iteration.</summary>
    public void WarmUp()
    {
        YcsbRunner.Measure(_store, _workers, _streams, _verifier, YcsbRunner.WarmupSeconds, $"  {_label} warm-up");
        _checkpointsBefore = _store.CheckpointsCommitted;
    }

    /// <summary>Measures one iteration.</summary>
    public void Iterate(int iteration)
    {
        StartIteration();
        MeasureSlice(iteration, _options.Seconds, settle: false);
        EndIteration(iteration);
    }

    /// <summary>Starts an iteration measured in slices (<see cref="MeasureSlice"/>, then <see cref="EndIteration"/>).</summary>
    public void StartIteration()
    {
        _iterationOperations = 0;
        _iterationSeconds = 0;
        _iterationAllocated = 0;
        _iterationCounted = 0;
        _iterationSeries = [];
    }

    /// <summary>
    /// Measures <paramref name="seconds"/> of the current iteration; with <paramref name="settle"/>, then waits for the
    /// background work the slice left running and counts that wait as the slice's time: a store whose compaction
    /// finished with its writers stopped is charged for it as if they had waited for all of it.
    /// </summary>
    public void MeasureSlice(int iteration, int seconds, bool settle)
    {
        (double opsPerSecond, IReadOnlyList<double> series, long operations, long allocated, double elapsed) =
            YcsbRunner.Measure(_store, _workers, _streams, _verifier, seconds, $"  {_label} iteration {iteration}");
        _totalOperations += operations;
        _iterationAllocated += allocated;
        _iterationCounted += operations;
        _iterationOperations += opsPerSecond * elapsed;
        _iterationSeconds += elapsed + (settle ? Settle() : 0);
        _iterationSeries.AddRange(series);
    }

    /// <summary>Records the iteration's throughput: its operations over its slices' time.</summary>
    public void EndIteration(int iteration)
    {
        double opsPerSecond = _iterationOperations / _iterationSeconds;
        _totalAllocated += _iterationAllocated;
        _throughput.Add(opsPerSecond);
        _intervals.Add(_iterationSeries);
        // Per iteration too: what the first allocates (pools of pending operations and device requests growing to the
        // most the run ever has in flight) is not what a store serving for hours does.
        Console.WriteLine($"  {_label} iteration {iteration}: {opsPerSecond / 1e6:F2} M ops/s, " +
            $"{(_iterationCounted == 0 ? 0 : (double)_iterationAllocated / _iterationCounted):F3} B/op allocated");
    }

    /// <summary>Waits for the background work the last iteration left running (<see cref="IYcsbStore.Settle"/>);
    /// returns the seconds it took.</summary>
    public double Settle()
    {
        var clock = Stopwatch.StartNew();
        _store.Settle();
        double seconds = clock.Elapsed.TotalSeconds;
        if (seconds > 0.1)
        {
            Console.WriteLine($"  {_label}: background work settled in {seconds:F1} s");
        }

        return seconds;
    }

    /// <summary>Turns the store's disk samples on or off (<see cref="IYcsbStore.SampleDisk"/>).</summary>
    public void SampleDisk(bool running) => _store.SampleDisk(running);

    /// <summary>Closes the workers, verifies the store against the streams run, and reports.</summary>
    public YcsbResult Finish()
    {
        DisposeWorkers();
        var verify = Stopwatch.StartNew();
        YcsbVerification verification = _verifier.Verify(_store);
        Console.WriteLine($"  {_label} verified in {verify.Elapsed.TotalSeconds:F1} s: {verification}");

        return new YcsbResult(_storeName, _mix.ToString(), _distribution, _valueBytes, _threads, _options.Keys,
            _throughput, _intervals, _loadSeconds,
            _totalOperations == 0 ? 0 : (double)_totalAllocated / _totalOperations)
        {
            CheckpointsCommitted = _store.CheckpointsCommitted - _checkpointsBefore,
            Checkpointed = _options.CheckpointEverySeconds is not null,
            Compacted = _compaction is true,
            PeakDiskBytes = _store.PeakDiskBytes,
            LiveBytes = _liveBytes,
            LogWrittenBytes = _store.LogWrittenBytes,
            Verification = verification,
        };
    }

    private void DisposeWorkers()
    {
        if (_workersDisposed)
        {
            return;
        }

        _workersDisposed = true;
        foreach (IYcsbWorker worker in _workers)
        {
            worker.Dispose();
        }
    }

    public void Dispose()
    {
        DisposeWorkers();
        _store.Dispose();
    }
}
