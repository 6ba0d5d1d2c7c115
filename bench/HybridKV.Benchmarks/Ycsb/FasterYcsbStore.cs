using System.Numerics;
using System.Runtime.CompilerServices;
using FASTER.core;
using HybridKV.Benchmarks.LargerThanMemory;
using FasterEmpty = FASTER.core.Empty;
using FasterStatus = FASTER.core.Status;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// Microsoft FASTER (Microsoft.FASTER.Core), configured as its own YCSB benchmark (<c>cs/benchmark</c>) configures it:
/// an index of #keys / 2 buckets (its hash packing of 2, the runner's default too), no record locking
/// (<see cref="ConcurrencyControlMode.None"/>), a log on a preallocated device, one session per thread driven through
/// its unsafe context (epoch protection held across a batch, as HybridKV's protected scope), pending operations
/// completed between batches. What HybridKV's run sets, FASTER gets too: the same index buckets, the same log memory
/// (<c>--memory-mb</c>, else the runner's in-memory sizing: twice HybridKV's records, at least 64 MiB, a power of two),
/// 4 MiB pages and a mutable fraction of 0.9. The device is a file under the run directory: FASTER's own
/// (<see cref="FASTER.core.Devices.CreateLogDevice"/>, which on Linux reads and writes through the page cache), or with
/// <c>--peer-page-cache off</c> HybridKV's direct-I/O file device behind FASTER's device interface
/// (<see cref="FasterOnHybridKvDevice"/>). RMW adds through FASTER's functions: atomically in place (records are not
/// locked), on a copy otherwise.
/// </summary>
public static class FasterYcsbStore
{
    /// <summary>FASTER's log memory for a run, in bits: HybridKV's (FASTER sizes memory as a power of two, so a
    /// <c>--memory-mb</c> that is not one is rounded down).</summary>
    public static int MemorySizeBits(YcsbStoreOptions options) => BitOperations.Log2((ulong)options.MemoryBytes);

    /// <summary>A FASTER store of 8-byte or 100-byte values for the run <paramref name="options"/> describes.</summary>
    public static IYcsbStore Create(YcsbStoreOptions options, bool pageCache) => options.ValueBytes == 8
        ? new Store<long, LongValues>(options, pageCache)
        : new Store<Value100, Value100s>(options, pageCache);

    /// <summary>
    /// The kind of FASTER's checkpoints: the one <c>--checkpoint-mode</c> names, and for <c>auto</c> (FASTER has no
    /// choice of its own) what HybridKV's automatic choice took in every measured run: a snapshot larger than memory,
    /// a fold-over in memory.
    /// </summary>
    private static CheckpointType CheckpointTypeFor(YcsbStoreOptions options) => options.CheckpointMode switch
    {
        HybridKV.Checkpoints.CheckpointMode.FoldOver => CheckpointType.FoldOver,
        HybridKV.Checkpoints.CheckpointMode.Snapshot => CheckpointType.Snapshot,
        _ => options.MemoryMb is null ? CheckpointType.FoldOver : CheckpointType.Snapshot,
    };

    private const int PageSizeBits = 22;     // HybridKV's runner: StoreSettings.PageSizeBits = 22
    private const double MutableFraction = 0.9;  // HybridKV's default (StoreSettings.MutableFraction)
    private const int SegmentSizeBits = 30;  // FASTER's default, and HybridKV's file device's

    private sealed class Store<TValue, TValues> : IYcsbStore
        where TValue : unmanaged
        where TValues : IYcsbValues<TValue>
    {
        private readonly FasterKV<long, TValue> _store;
        private readonly IDevice _device;
        private readonly HybridKV.Devices.LocalFileDevice? _directDevice;
        private readonly string _logPath;
        private ClientSession<long, TValue, long, long, FasterEmpty, Functions<TValue>>? _verifier;
        private readonly PeriodicCheckpoints? _checkpoints;

        public Store(YcsbStoreOptions options, bool pageCache)
        {
            string directory = Path.Combine(options.Directory, "faster");
            if (Directory.Exists(directory))
            {
                Directory.Delete(directory, recursive: true);
            }

            Directory.CreateDirectory(directory);
            _logPath = Path.Combine(directory, "hlog");
            if (pageCache)
            {
                _device = FASTER.core.Devices.CreateLogDevice(_logPath, preallocateFile: true, deleteOnClose: true);
            }
            else
            {
                _directDevice = new HybridKV.Devices.LocalFileDevice(new HybridKV.Devices.LocalFileDeviceOptions
                {
                    Directory = directory,
                    SegmentSize = 1L << SegmentSizeBits,
                });
                _device = new FasterOnHybridKvDevice(_directDevice, _logPath);
            }

            MemoryBits = MemorySizeBits(options);
            _store = new FasterKV<long, TValue>(options.IndexBuckets,
                new LogSettings
                {
                    LogDevice = _device,
                    PageSizeBits = PageSizeBits,
                    MemorySizeBits = MemoryBits,
                    MutableFraction = MutableFraction,
                    SegmentSizeBits = SegmentSizeBits,
                    PreallocateLog = true,
                    ReadCopyOptions = options.PeerCopyReads ? new ReadCopyOptions(ReadCopyFrom.Device, ReadCopyTo.MainLog)
                        : ReadCopyOptions.None,
                    ReadCacheSettings = options.ReadCacheMb is { } cacheMb
                        ? new ReadCacheSettings
                        {
                            MemorySizeBits = System.Numerics.BitOperations.Log2((ulong)cacheMb << 20),
                            PageSizeBits = Math.Min(PageSizeBits, System.Numerics.BitOperations.Log2((ulong)cacheMb << 20) - 1),
                        }
                        : null,
                },
                options.CheckpointEvery is null ? null
                    : new CheckpointSettings { CheckpointDir = Path.Combine(directory, "checkpoints"), RemoveOutdated = true },
                concurrencyControlMode: ConcurrencyControlMode.None);
            Name = "faster";
            if (options.CheckpointEvery is { } every)
            {
                CheckpointType type = CheckpointTypeFor(options);
                _checkpoints = new PeriodicCheckpoints(every, async cancellationToken =>
                {
                    (bool started, _) = await _store.TakeHybridLogCheckpointAsync(type, cancellationToken: cancellationToken)
                        .ConfigureAwait(false);
                    if (!started)
                    {
                        throw new InvalidOperationException("FASTER did not start a checkpoint: one was still running.");
                    }
                });
            }
        }

        public long CheckpointsCommitted => _checkpoints?.Committed ?? 0;

        public void Settle() => _checkpoints?.Settle();

        public string Name { get; }

        private int MemoryBits { get; }

        public string Progress =>
            $"log {(_store.Log.TailAddress - _store.Log.BeginAddress) >> 20} MiB, in memory " +
            $"{(_store.Log.TailAddress - _store.Log.HeadAddress) >> 20} MiB of {1L << (MemoryBits - 20)} MiB" +
            (_directDevice is null ? $", {PageCache.Describe(_logPath)}"
                : $", device read {_directDevice.BytesRead >> 20} MiB, written {_directDevice.BytesWritten >> 20} MiB") +
            $", process {Environment.WorkingSet >> 20} MiB";

        public long LogWrittenBytes => _store.Log.TailAddress;

        public void Load(long keys, int threads, Action<long> progress) =>
            YcsbLoad.Split(keys, threads, progress, (first, end) =>
            {
                using ClientSession<long, TValue, long, long, FasterEmpty, Functions<TValue>> session = NewSession();
                for (long key = first; key < end; key++)
                {
                    long k = key;
                    TValue value = TValues.From(key);
                    session.Upsert(ref k, ref value);
                }

                session.CompletePending(wait: true);
            });

        public IYcsbWorker CreateWorker() => new Worker(NewSession(), _checkpoints);

        public bool TryReadCounter(long key, out long counter)
        {
            _verifier ??= NewSession();
            long input = 0;
            long output = 0;
            FasterStatus status = _verifier.Read(ref key, ref input, ref output);
            if (status.IsPending)
            {
                _verifier.CompletePendingWithOutputs(out CompletedOutputIterator<long, TValue, long, long, FasterEmpty> outputs,
                    wait: true);
                using (outputs)
                {
                    while (outputs.Next())
                    {
                        status = outputs.Current.Status;
                        output = outputs.Current.Output;
                    }
                }
            }

            counter = output;
            return status.Found;
        }

        private ClientSession<long, TValue, long, long, FasterEmpty, Functions<TValue>> NewSession() =>
            _store.For(default(Functions<TValue>)).NewSession<Functions<TValue>>();

        public void Dispose()
        {
            try
            {
                _checkpoints?.Dispose();
            }
            finally
            {
                _verifier?.Dispose();
                _store.Dispose();
                _device.Dispose();
                _directDevice?.Dispose();
            }
        }

        private sealed class Worker(ClientSession<long, TValue, long, long, FasterEmpty, Functions<TValue>> session,
            PeriodicCheckpoints? checkpoints) : IYcsbWorker
        {
            private long _issuedPending;

            public long Run(YcsbStreams streams, int start, int count)
            {
                checkpoints?.Touch();
                long[] keys = streams.Keys;
                YcsbOperation[] operations = streams.Operations;
                long checksum = 0;
                long pending = 0;
                UnsafeContext<long, TValue, long, long, FasterEmpty, Functions<TValue>> context = session.UnsafeContext;
                context.BeginUnsafe();
                try
                {
                    for (int i = start; i < start + count; i++)
                    {
                        long key = keys[i];
                        switch (operations[i])
                        {
                            case YcsbOperation.Read:
                                long input = 0;
                                long output = 0;
                                FasterStatus read = context.Read(ref key, ref input, ref output, FasterEmpty.Default, 0);
                                if (read.Found)
                                {
                                    checksum += output;
                                }
                                else if (read.IsPending)
                                {
                                    pending++;
                                }

                                break;
                            case YcsbOperation.Upsert:
                                TValue value = TValues.From(i);
                                context.Upsert(ref key, ref value, FasterEmpty.Default, 0);
                                break;
                            case YcsbOperation.RMW:
                                long one = 1;
                                if (context.RMW(ref key, ref one, FasterEmpty.Default, 0).IsPending)
                                {
                                    pending++;
                                }

                                break;
                            default:
                                context.Delete(ref key, FasterEmpty.Default, 0);
                                break;
                        }
                    }
                }
                finally
                {
                    context.EndUnsafe();
                }

                _issuedPending += pending;
                return checksum;
            }

            public void Complete(bool wait)
            {
                if (!wait && _issuedPending - Functions<TValue>.Completed <= YcsbRunner.MaxPending)
                {
                    session.CompletePending(wait: false);
                    return;
                }

                session.CompletePending(wait: true);
                // Nothing is in flight now; the next measurement may run this session on another thread.
                _issuedPending = 0;
                Functions<TValue>.ResetCompleted();
            }

            public void Dispose() => session.Dispose();
        }
    }

    /// <summary>
    /// The callbacks of FASTER's benchmark (<c>cs/benchmark/Functions.cs</c>) for a value whose first 8 bytes are the
    /// counter: readers return the counter; RMW adds its input, with an atomic add in place because FASTER runs
    /// without record locks, as HybridKV's callbacks do; completions are counted per thread for the pending bound.
    /// </summary>
    private struct Functions<TValue> : FASTER.core.IFunctions<long, TValue, long, long, FasterEmpty>
        where TValue : unmanaged
    {
        // Completion callbacks run on the thread that calls CompletePending: the worker's own thread.
        [ThreadStatic]
        private static long t_completed;

        public static long Completed => t_completed;

        public static void ResetCompleted() => t_completed = 0;

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        private static ref long Counter(ref TValue value) => ref Unsafe.As<TValue, long>(ref value);

        public readonly bool SingleReader(ref long key, ref long input, ref TValue value, ref long dst, ref ReadInfo readInfo)
        {
            dst = Counter(ref value);
            return true;
        }

        public readonly bool ConcurrentReader(ref long key, ref long input, ref TValue value, ref long dst, ref ReadInfo readInfo)
        {
            dst = Volatile.Read(ref Counter(ref value));
            return true;
        }

        public readonly void ReadCompletionCallback(ref long key, ref long input, ref long output, FasterEmpty ctx,
            FasterStatus status, RecordMetadata recordMetadata) => t_completed++;

        public readonly bool SingleWriter(ref long key, ref long input, ref TValue src, ref TValue dst, ref long output,
            ref UpsertInfo upsertInfo, WriteReason reason)
        {
            dst = src;
            return true;
        }

        public readonly void PostSingleWriter(ref long key, ref long input, ref TValue src, ref TValue dst,
            ref long output, ref UpsertInfo upsertInfo, WriteReason reason)
        {
        }

        // A 100-byte copy is not atomic; readers may see a torn value, as in FASTER's and HybridKV's benchmarks.
        public readonly bool ConcurrentWriter(ref long key, ref long input, ref TValue src, ref TValue dst,
            ref long output, ref UpsertInfo upsertInfo)
        {
            dst = src;
            return true;
        }

        public readonly bool NeedInitialUpdate(ref long key, ref long input, ref long output, ref RMWInfo rmwInfo) => true;

        public readonly bool InitialUpdater(ref long key, ref long input, ref TValue value, ref long output, ref RMWInfo rmwInfo)
        {
            value = default;
            Counter(ref value) = input;
            return true;
        }

        public readonly void PostInitialUpdater(ref long key, ref long input, ref TValue value, ref long output,
            ref RMWInfo rmwInfo)
        {
        }

        public readonly bool NeedCopyUpdate(ref long key, ref long input, ref TValue oldValue, ref long output,
            ref RMWInfo rmwInfo) => true;

        public readonly bool CopyUpdater(ref long key, ref long input, ref TValue oldValue, ref TValue newValue,
            ref long output, ref RMWInfo rmwInfo)
        {
            newValue = oldValue;
            Counter(ref newValue) += input;
            return true;
        }

        public readonly void PostCopyUpdater(ref long key, ref long input, ref TValue oldValue, ref TValue newValue,
            ref long output, ref RMWInfo rmwInfo)
        {
        }

        public readonly bool InPlaceUpdater(ref long key, ref long input, ref TValue value, ref long output, ref RMWInfo rmwInfo)
        {
            Interlocked.Add(ref Counter(ref value), input);
            return true;
        }

        public readonly void RMWCompletionCallback(ref long key, ref long input, ref long output, FasterEmpty ctx,
            FasterStatus status, RecordMetadata recordMetadata) => t_completed++;

        public readonly bool SingleDeleter(ref long key, ref TValue value, ref DeleteInfo deleteInfo)
        {
            value = default;
            return true;
        }

        public readonly void PostSingleDeleter(ref long key, ref DeleteInfo deleteInfo)
        {
        }

        public readonly bool ConcurrentDeleter(ref long key, ref TValue value, ref DeleteInfo deleteInfo) => true;

        public readonly void DisposeSingleWriter(ref long key, ref long input, ref TValue src, ref TValue dst,
            ref long output, ref UpsertInfo upsertInfo, WriteReason reason)
        {
        }

        public readonly void DisposeCopyUpdater(ref long key, ref long input, ref TValue oldValue, ref TValue newValue,
            ref long output, ref RMWInfo rmwInfo)
        {
        }

        public readonly void DisposeInitialUpdater(ref long key, ref long input, ref TValue value, ref long output,
            ref RMWInfo rmwInfo)
        {
        }

        public readonly void DisposeSingleDeleter(ref long key, ref TValue value, ref DeleteInfo deleteInfo)
        {
        }

        public readonly void DisposeDeserializedFromDisk(ref long key, ref TValue value)
        {
        }

        public readonly void CheckpointCompletionCallback(int sessionID, string sessionName, CommitPoint commitPoint)
        {
        }
    }
}
