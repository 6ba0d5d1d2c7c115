using System.Buffers.Binary;
using System.Globalization;
using RocksDbSharp;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// RocksDB through its .NET binding (the <c>RocksDB</c> package, which carries the native library). Keys are 8 bytes
/// (big-endian), values 8 or 100 bytes whose first 8 are the counter (little-endian). RocksDB has no RMW of its own
/// that the binding exposes (merge operators are native callbacks), so an RMW is a get and a put under one of 4,096
/// striped locks; upserts take the same stripe, so that an upsert is never lost between an RMW's get and put. Reads
/// take no lock.
/// <para>
/// Configuration: the block cache (LRU) is the run's memory budget (<c>--memory-mb</c>, else the runner's in-memory
/// sizing, as HybridKV's log memory); memtables are RocksDB's default (64 MiB, at most two) on top of it. The WAL is
/// off: HybridKV and FASTER have no write-ahead log (their durability is checkpoints), and a WAL would only add a
/// sequential append per write; with <c>--checkpoint-every</c>, RocksDB's durability is its checkpoints too. No
/// compression (the other stores do not compress, and the runner's values are mostly zeros), a 10-bit bloom filter
/// per key, as many background threads as cores. With
/// <c>--peer-page-cache off</c>, reads, flushes and compactions use direct I/O, so the block cache is the only cache.
/// </para>
/// </summary>
public static class RocksDbYcsbStore
{
    private const int Stripes = 4096;

    /// <summary>A RocksDB database under the run directory for the run <paramref name="options"/> describes.</summary>
    public static IYcsbStore Create(YcsbStoreOptions options, bool pageCache) => new Store(options, pageCache);

    private sealed class Store : IYcsbStore
    {
        private readonly RocksDb _db;
        private readonly Cache _cache;
        private readonly WriteOptions _write;
        private readonly Lock[] _stripes;
        private readonly int _valueBytes;
        private readonly long _cacheBytes;
        private readonly string _directory;
        private readonly bool _pageCache;
        private readonly PeriodicCheckpoints? _checkpoints;
        private string? _lastCheckpoint;

        public Store(YcsbStoreOptions options, bool pageCache)
        {
            _directory = Path.Combine(options.Directory, "rocksdb");
            if (Directory.Exists(_directory))
            {
                Directory.Delete(_directory, recursive: true);
            }

            Directory.CreateDirectory(_directory);
            _valueBytes = options.ValueBytes;
            _pageCache = pageCache;
            _cacheBytes = options.MemoryBytes;
            _cache = Cache.CreateLru((ulong)_cacheBytes);
            BlockBasedTableOptions table = new BlockBasedTableOptions()
                .SetBlockCache(_cache)
                .SetFilterPolicy(BloomFilterPolicy.Create(10, false))
                .SetWholeKeyFiltering(true);
            DbOptions db = new DbOptions()
                .SetCreateIfMissing(true)
                .IncreaseParallelism(Environment.ProcessorCount)
                .SetCompression(Compression.No)
                .SetBlockBasedTableFactory(table)
                .SetUseDirectReads(!pageCache)
                .SetUseDirectIoForFlushAndCompaction(!pageCache);
            _db = RocksDb.Open(db, _directory);
            _write = new WriteOptions().DisableWal(1);
            _stripes = [.. Enumerable.Range(0, Stripes).Select(_ => new Lock())];
            if (options.CheckpointEvery is { } every)
            {
                // A RocksDB checkpoint cannot be cancelled: stopping waits for the one in progress.
                _checkpoints = new PeriodicCheckpoints(every, _ => Task.Run(SaveCheckpoint, CancellationToken.None));
            }
        }

        public long CheckpointsCommitted => _checkpoints?.Committed ?? 0;

        /// <summary>
        /// RocksDB's checkpoint (<c>Checkpoint::CreateCheckpoint</c>): the memtables flushed (the WAL is off, so a
        /// checkpoint without the flush would lack their writes), then the table files hard-linked into a new directory
        /// that opens as the database; the one before it is deleted once it is taken.
        /// </summary>
        private void SaveCheckpoint()
        {
            string next = $"{_directory}-checkpoint-{Guid.NewGuid():N}";
            using (Checkpoint checkpoint = _db.Checkpoint())
            {
                checkpoint.Save(next, 0);
            }

            if (_lastCheckpoint is { } last)
            {
                Directory.Delete(last, recursive: true);
            }

            _lastCheckpoint = next;
        }

        public string Name => "rocksdb";

        public string Progress =>
            $"block cache {_cache.GetUsage() >> 20} MiB of {_cacheBytes >> 20} MiB, " +
            $"memtables {Property("rocksdb.cur-size-all-mem-tables") >> 20} MiB, " +
            $"files {Property("rocksdb.live-sst-files-size") >> 20} MiB" +
            (_pageCache ? $", {PageCache.Describe(Path.Combine(_directory, "*"))}" : "") +
            $", process {Environment.WorkingSet >> 20} MiB";

        /// <summary>
        /// Waits until no flush or compaction runs or is pending: after a bulk load RocksDB compacts for seconds in
        /// its background threads, and in a run of several stores those seconds landed on whichever store was
        /// measured next. Polled, since the binding exposes no wait; gives up after a minute.
        /// </summary>
        public void Settle()
        {
            _checkpoints?.Settle();
            var clock = System.Diagnostics.Stopwatch.StartNew();
            while (clock.Elapsed < TimeSpan.FromMinutes(1) &&
                   (Property("rocksdb.num-running-compactions") > 0 || Property("rocksdb.num-running-flushes") > 0 ||
                    Property("rocksdb.compaction-pending") > 0 || Property("rocksdb.mem-table-flush-pending") > 0))
            {
                Thread.Sleep(20);
            }
        }

        private long Property(string name) =>
            long.TryParse(_db.GetProperty(name), NumberStyles.Integer, CultureInfo.InvariantCulture, out long value) ? value : 0;

        public void Load(long keys, int threads, Action<long> progress) =>
            YcsbLoad.Split(keys, threads, progress, (first, end) =>
            {
                byte[] key = new byte[8];
                byte[] value = new byte[_valueBytes];
                for (long k = first; k < end; k++)
                {
                    BinaryPrimitives.WriteInt64BigEndian(key, k);
                    BinaryPrimitives.WriteInt64LittleEndian(value, k);
                    _db.Put(key, key.Length, value, value.Length, null, _write);
                }
            });

        public IYcsbWorker CreateWorker() => new Worker(this);

        public bool TryReadCounter(long key, out long counter)
        {
            byte[] keyBytes = new byte[8];
            byte[] value = new byte[_valueBytes];
            BinaryPrimitives.WriteInt64BigEndian(keyBytes, key);
            long length = _db.Get(keyBytes, keyBytes.Length, value, 0, value.Length);
            counter = length >= 8 ? BinaryPrimitives.ReadInt64LittleEndian(value) : 0;
            return length >= 0;
        }

        public void Dispose()
        {
            try
            {
                _checkpoints?.Dispose();
            }
            finally
            {
                if (_lastCheckpoint is { } last)
                {
                    Directory.Delete(last, recursive: true);
                }

                _db.Dispose();
                (_cache as IDisposable)?.Dispose();
            }
        }

        private sealed class Worker(Store store) : IYcsbWorker
        {
            private readonly byte[] _key = new byte[8];
            private readonly byte[] _value = new byte[store._valueBytes];

            public long Run(YcsbStreams streams, int start, int count)
            {
                store._checkpoints?.Touch();
                long[] keys = streams.Keys;
                YcsbOperation[] operations = streams.Operations;
                RocksDb db = store._db;
                WriteOptions write = store._write;
                long checksum = 0;
                for (int i = start; i < start + count; i++)
                {
                    long key = keys[i];
                    BinaryPrimitives.WriteInt64BigEndian(_key, key);
                    switch (operations[i])
                    {
                        case YcsbOperation.Read:
                            if (db.Get(_key, 8, _value, 0, _value.Length) >= 8)
                            {
                                checksum += BinaryPrimitives.ReadInt64LittleEndian(_value);
                            }

                            break;
                        case YcsbOperation.Upsert:
                            BinaryPrimitives.WriteInt64LittleEndian(_value, i);
                            lock (Stripe(key))
                            {
                                db.Put(_key, 8, _value, _value.Length, null, write);
                            }

                            break;
                        case YcsbOperation.RMW:
                            lock (Stripe(key))
                            {
                                long length = db.Get(_key, 8, _value, 0, _value.Length);
                                long counter = length >= 8 ? BinaryPrimitives.ReadInt64LittleEndian(_value) : 0;
                                if (length < 8)
                                {
                                    Array.Clear(_value); // absent (deleted): the RMW starts from its input
                                }

                                BinaryPrimitives.WriteInt64LittleEndian(_value, counter + 1);
                                db.Put(_key, 8, _value, _value.Length, null, write);
                            }

                            break;
                        default:
                            lock (Stripe(key))
                            {
                                db.Remove(_key, null, write);
                            }

                            break;
                    }
                }

                return checksum;
            }

            private Lock Stripe(long key) => store._stripes[(int)((ulong)KeyHashing.Mix(key) % Stripes)];

            public void Complete(bool wait)
            {
            }

            public void Dispose()
            {
            }
        }
    }
}
