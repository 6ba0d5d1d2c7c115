using System.Diagnostics;
using System.Numerics;
using HybridKV.Benchmarks.LargerThanMemory;
using CountStore;
using HybridKV.Devices;
using HybridKV.Sessions;
using Microsoft.Extensions.Logging;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// HybridKV through generated callbacks: the CountStore sample's <see cref="Counts"/> for 8-byte values (atomic add in
/// place, volatile reads and writes), <see cref="YcsbValue100s"/> for 100-byte values. All in memory
/// unless a memory budget is given (then the log spills to a file device); with a checkpoint interval, periodic CPR
/// checkpoints run on a file device beside the log. The <c>hybridkv-varlen</c> store keeps the same values as byte
/// sequences (<see cref="YcsbVarValues"/>), in the variable-length record layout.
/// </summary>
public static class HybridKvYcsbStore
{
    public static IYcsbStore Create(YcsbStoreOptions options, bool variableLength = false)
    {
        if (variableLength)
        {
            YcsbVarValues.InitialLength = options.ValueBytes;
            return new Store<VarBytes, YcsbVarValues.Functions, VarBytesValues>(options, "hybridkv-varlen",
                VarRecordBytes(options.ValueBytes));
        }

        return options.ValueBytes == 8
            ? new Store<long, Counts.Functions, LongValues>(options, "hybridkv", RecordBytes(8))
            : new Store<Value100, YcsbValue100s.Functions, Value100s>(options, "hybridkv", RecordBytes(100));
    }

    /// <summary>Bytes per record, as the store lays it out (checksum included).</summary>
    public static long RecordBytes(int valueBytes) => valueBytes == 8
        ? HybridKV.Log.LogRecord<long, long>.FixedSize
        : HybridKV.Log.LogRecord<long, Value100>.FixedSize;

    /// <summary>Bytes per variable-layout record (long key, byte-sequence value), as the store lays it out.</summary>
    public static long VarRecordBytes(int valueBytes) => HybridKV.Log.LogRecord<long, VarBytes>.SizeFor(8, valueBytes);

    /// <summary>The working set: index buckets and records, what the memory probe's array matches.</summary>
    public static long WorkingSetBytes(long keys, int valueBytes, long indexBuckets) =>
        (indexBuckets * 64) + (keys * RecordBytes(valueBytes));

    private sealed class Store<TValue, TFunctions, TValues> : IYcsbStore
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<long, TValue, long, long, Empty>
        where TValues : IYcsbValueBuilder<TValue>
    {
        private readonly HybridKVStore<long, TValue, long, long, Empty, TFunctions> _store;
        private readonly StorageDevice? _device;
        private readonly int _valueBytes;
        private long _checkpointsCommitted;
        private bool _watchingCommits; // workers are created on the runner's thread
        private readonly string? _logDirectory;
        // The store's own directory, deleted when it is disposed (null: in memory).
        private readonly string? _directory;
        private readonly Timer? _diskSampler;
        private readonly ILoggerFactory? _loggerFactory;
        private long _peakDiskBytes;
        private readonly int _readBatch;
        private readonly int _prefetch;
        private Session<long, TValue, long, long, Empty, TFunctions>? _verifier; // reads sampled keys after a run

        public Store(YcsbStoreOptions options, string name, long recordBytes)
        {
            Name = name;
            _valueBytes = options.ValueBytes;
            _readBatch = options.ReadBatch;
            _prefetch = options.Prefetch;
            long dataBytes = options.Keys * recordBytes;
            bool needsDevice = options.MemoryMb is not null || options.CheckpointEvery is not null || options.OnDevice;
            if (needsDevice)
            {
                if (Directory.Exists(options.Directory))
                {
                    Directory.Delete(options.Directory, recursive: true);
                }

                _directory = options.Directory;

                if (options.Device == "azure")
                {
                    string connection = Environment.GetEnvironmentVariable("HYBRIDKV_AZURE_CONNECTION") ??
                        throw new InvalidOperationException("--device azure needs HYBRIDKV_AZURE_CONNECTION.");
                    _device = HybridKV.Azure.AzurePageBlobDevice.OpenAsync(connection, options.AzureContainer,
                        new HybridKV.Azure.AzurePageBlobDeviceOptions { SegmentSize = options.SegmentBytes })
                        .GetAwaiter().GetResult();
                }
                else
                {
                    _device = new LocalFileDevice(new LocalFileDeviceOptions
                    {
                        Directory = Path.Combine(options.Directory, "log"),
                        SegmentSize = options.SegmentBytes,
                    });
                    _logDirectory = Path.Combine(options.Directory, "log");
                    // Samples what the log's files hold (a flush or a truncation can change it at any moment).
                    _diskSampler = new Timer(_ => TakeDiskSample(), null, TimeSpan.Zero, TimeSpan.FromMilliseconds(100));
                }
            }

            // In memory, the log gets twice the data, so that the loaded records stay in the mutable region and
            // updates to them are in place (the papers' in-memory configuration).
            long memory = options.MemoryMb is { } budget
                ? budget << 20
                : (long)BitOperations.RoundUpToPowerOf2((ulong)Math.Max(1L << 26, dataBytes * 2));
            var settings = new StoreSettings
            {
                IndexBuckets = options.IndexBuckets,
                // 4 MiB pages, or eight pages in memory where it is smaller than 32 MiB (the soak's quarter of 1M
                // keys): with two frames the log turns pages faster than they flush, and a writer limit checked at
                // page turns is kept to within a page, which should be a small share of the data.
                PageSizeBits = Math.Clamp(BitOperations.Log2((ulong)memory / 8), 16, 22),
                MemorySizeBytes = memory,
                LogDevice = _device,
                CheckpointDirectory = options.CheckpointEvery is null ? null : Path.Combine(options.Directory, "checkpoints"),
                CheckpointInterval = options.CheckpointEvery,
                // Every run measures an empty store, whatever an earlier run left in the directory.
                ExistingData = ExistingDataPolicy.Delete,
                ReadCacheBytes = (options.ReadCacheMb ?? 0) << 20,
                CopyHotReadsToTail = options.CopyHotReads,
                LoggerFactory = _loggerFactory = options.StoreLog is { } level
                    ? LoggerFactory.Create(logging => logging
                        .AddSimpleConsole(console => console.TimestampFormat = "HH:mm:ss.fff ")
                        .SetMinimumLevel(level))
                    : null,
            };

            // Otherwise the library's defaults: the checkpoint-soak scenario measures what a user gets without tuning.
            if (options.CheckpointMode is { } mode)
            {
                settings = settings with { PeriodicCheckpointMode = mode };
            }

            if (options.LogCompactionRatio is { } ratio)
            {
                settings = settings with { LogCompactionRatio = ratio };
            }

            if (options.LogSizeLimitRatio is { } limit && settings.LogCompactionRatio != 0)
            {
                settings = settings with { LogSizeLimitRatio = limit };
            }

            _store = new HybridKVStore<long, TValue, long, long, Empty, TFunctions>(settings);
        }

        public string Name { get; }

        public void Load(long keys, int threads, Action<long> progress) =>
            YcsbLoad.Split(keys, threads, progress, (first, end) =>
            {
                using Session<long, TValue, long, long, Empty, TFunctions> session = _store.NewSession();
                byte[] scratch = NewScratch();
                for (long key = first; key < end; key++)
                {
                    TValue value = TValues.Build(key, scratch);
                    session.Upsert(key, value);
                }

                session.CompletePending(wait: true);
            });

        public IYcsbWorker CreateWorker()
        {
            Session<long, TValue, long, long, Empty, TFunctions> session = _store.NewSession();
            if (!_watchingCommits)
            {
                _watchingCommits = true;
                // Every checkpoint commits every session: one session's commits count the checkpoints.
                session.Committed += (_, _) => Interlocked.Increment(ref _checkpointsCommitted);
            }

            return new Worker(session, NewScratch(), _readBatch, _prefetch);
        }

        public bool TryReadCounter(long key, out long counter)
        {
            _verifier ??= _store.NewSession();
            ReadResult<long> result = _verifier.ReadAsync(key).AsTask().GetAwaiter().GetResult();
            counter = result.Output;
            return result.Status == Status.Ok;
        }

        public long CheckpointsCommitted => Interlocked.Read(ref _checkpointsCommitted);

        public long PeakDiskBytes => Interlocked.Read(ref _peakDiskBytes);

        public long LogWrittenBytes => _store.TailAddress;

        public void Settle()
        {
            if (_store.LogCompaction is { } compaction)
            {
                // Until automatic compaction waits for a page turn with nothing to do: the compaction in progress
                // turned pages with its copies, and would start the next one while another store is measured.
                var clock = Stopwatch.StartNew();
                while (!compaction.AutomaticIdle && clock.Elapsed < TimeSpan.FromMinutes(1))
                {
                    // The runner's pace, not synchronisation: the store's own loop decides, this only looks.
                    Thread.Sleep(1);
                }

                // Nothing to compact up to the begin address: this returns once a compaction in progress ended.
                _store.CompactAsync(_store.BeginAddress).GetAwaiter().GetResult();
            }

            if (_store.Settings.CheckpointInterval is not null)
            {
                // Until a periodic checkpoint has committed the last operations: it would otherwise run while another
                // store is measured. Once nothing is uncommitted, the store's ticks take none.
                var clock = Stopwatch.StartNew();
                while (_store.HasUncommittedOperations && clock.Elapsed < TimeSpan.FromMinutes(1))
                {
                    // The runner's pace, not synchronisation: the store's own timer decides, this only looks.
                    Thread.Sleep(5);
                }
            }
        }

        public void SampleDisk(bool running)
        {
            if (_diskSampler is not null)
            {
                TakeDiskSample();
                TimeSpan period = running ? TimeSpan.FromMilliseconds(100) : Timeout.InfiniteTimeSpan;
                _diskSampler.Change(period, period);
            }
        }

        private void TakeDiskSample()
        {
            long bytes = 0;
            try
            {
                foreach (FileInfo file in new DirectoryInfo(_logDirectory!).EnumerateFiles("hlog.*"))
                {
                    bytes += file.Length;
                }
            }
            catch (IOException)
            {
                return; // a segment deleted while listed: the next sample sees the directory as it is
            }

            long peak = Interlocked.Read(ref _peakDiskBytes);
            while (bytes > peak && Interlocked.CompareExchange(ref _peakDiskBytes, bytes, peak) != peak)
            {
                peak = Interlocked.Read(ref _peakDiskBytes);
            }
        }

        public string Progress =>
            $"log {(_store.TailAddress - _store.BeginAddress) >> 20} MiB, in memory {(_store.TailAddress - _store.HeadAddress) >> 20} MiB" +
            $", page turns refused {_store.Engine.Log.PageTurnsRefused:N0}" +
            (_store.LogCompaction is { Compactions: > 0 } compaction
                ? $", {compaction.Compactions} compactions copied {compaction.BytesCopied >> 20} MiB, dropped {compaction.BytesReclaimed >> 20} MiB, disk peak {PeakDiskBytes >> 20} MiB"
                : "") +
            (_store.MemoryCompactor is { } compactor
                ? $", kept in memory {compactor.BytesCopied >> 20} MiB from {compactor.PagesExamined} pages ({compactor.PagesMostlyLive} mostly live, {compactor.PagesMissed} missed, {compactor.PagesSkipped} skipped, busy {compactor.BusyTime.TotalSeconds:F1} s)"
                : "") +
            (_store.Engine.ReadCache is { } cache ? $", read cache {cache.Hits} hits, {cache.Misses} misses" : "") +
            (_store.Engine.HotReadsCopied is > 0 and var hot ? $", hot reads copied {hot:N0}" : "") +
            (_device is null ? "" : $", device read {_device.BytesRead >> 20} MiB ({_store.Engine.BytesReadByOperations >> 20} by operations), written {_device.BytesWritten >> 20} MiB") +
            (_store.CheckpointsCommitted is { } committed
                ? $", checkpoints {committed.FoldOvers} fold-over {committed.Snapshots} snapshot"
                : "") +
            IndexGrowthProgress() +
            $", process {Environment.WorkingSet >> 20} MiB";

        /// <summary>
        /// The index's size and, once it has grown (start with a small --index-buckets to see it), the longest any
        /// operation could have stalled on a resize: the prepare phase (operations that must swing an entry wait one
        /// epoch drain) or the longest chunk split an operation did itself.
        /// </summary>
        private string IndexGrowthProgress()
        {
            HybridKV.Index.IndexGrowth growth = _store.Engine.Growth;
            if (growth.LastReport is not { } last)
            {
                return $", index {_store.IndexBucketCount} buckets";
            }

            return $", index {_store.IndexBucketCount} buckets after {growth.Completed} doublings, longest operation " +
                   $"stall in a resize {growth.LongestStall.TotalMilliseconds:F3} ms (last: prepare {last.PrepareStall.TotalMilliseconds:F3} ms, " +
                   $"chunk split {last.LongestSplitStall.TotalMilliseconds:F3} ms, {last.SplitByOperations}/{last.Chunks} " +
                   "chunks split by operations)";
        }

        /// <summary>A pinned buffer of the value size, where a thread builds byte-sequence values it upserts.</summary>
        private byte[] NewScratch() => GC.AllocateArray<byte>(Math.Max(_valueBytes, 8), pinned: true);

        public void Dispose()
        {
            _diskSampler?.Dispose();
            _verifier?.Dispose();
            _store.Dispose();
            _device?.Dispose();
            _loggerFactory?.Dispose();
            // The store without compaction in a soak leaves about 10 GB behind: a few runs filled a machine's disk.
            if (_directory is not null && Directory.Exists(_directory))
            {
                Directory.Delete(_directory, recursive: true);
            }
        }

        private sealed class Worker(
            Session<long, TValue, long, long, Empty, TFunctions> session, byte[] scratch, int readBatch, int prefetch)
            : IYcsbWorker
        {
            private readonly long[] _outputs = new long[readBatch];
            private readonly Status[] _statuses = new Status[readBatch];

            public long Run(YcsbStreams streams, int start, int count)
            {
                long[] keys = streams.Keys;
                YcsbOperation[] operations = streams.Operations;
                long checksum = 0;
                // One epoch protection per batch, as the papers' benchmarks hold it across operations.
                using ProtectedScope scope = session.BeginProtectedScope();
                int end = start + count;
                int groupEnd = start;
                for (int i = start; i < end; i++)
                {
                    if (i == groupEnd)
                    {
                        // The next group's keys, whatever their operations: its misses overlap.
                        groupEnd = prefetch > 1 ? Math.Min(end, i + prefetch) : end;
                        // A group of reads only goes to the batched read, which prefetches its keys itself.
                        if (prefetch > 1 && !(readBatch > 1 && operations.AsSpan(i, groupEnd - i).IndexOfAnyExcept(YcsbOperation.Read) < 0))
                        {
                            session.Prefetch(keys.AsSpan(i, groupEnd - i));
                        }
                    }

                    long key = keys[i];
                    if (readBatch > 1 && operations[i] == YcsbOperation.Read)
                    {
                        int batch = 1;
                        while (batch < readBatch && i + batch < groupEnd && operations[i + batch] == YcsbOperation.Read)
                        {
                            batch++;
                        }

                        session.Read(keys.AsSpan(i, batch), _outputs, _statuses);
                        for (int j = 0; j < batch; j++)
                        {
                            checksum += _statuses[j] == Status.Ok ? _outputs[j] : 0;
                        }

                        i += batch - 1;
                        continue;
                    }

                    switch (operations[i])
                    {
                        case YcsbOperation.Read:
                            long output = 0;
                            if (session.Read(key, ref output) == Status.Ok)
                            {
                                checksum += output;
                            }

                            break;
                        case YcsbOperation.Upsert:
                            TValue value = TValues.Build(i, scratch);
                            session.Upsert(key, value);
                            break;
                        case YcsbOperation.RMW:
                            session.RMW(key, 1);
                            break;
                        default:
                            session.Delete(key);
                            break;
                    }
                }

                return checksum;
            }

            public void Complete(bool wait) => session.CompletePending(wait || session.PendingCount > YcsbRunner.MaxPending);

            public void Dispose() => session.Dispose();
        }
    }
}
