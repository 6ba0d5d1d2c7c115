using HybridKV.Utilities;
using HybridKV.Log;
using HybridKV.Operations;

namespace HybridKV.Compaction;

/// <summary>
/// Compaction of the oldest part of the log (F2 §4, FASTER's lookup-based Compact): every live record of
/// [begin, until) is copied to the tail, tombstones are dropped, and then the begin address can move to
/// <c>until</c>. A record is copied only while the index still leads to it with no newer record of its key, by a CAS on
/// the entry it traced from, so a record superseded while compaction runs is never brought back; a copy changes no
/// value, so a crash at any point recovers the same data (CPR holds: copies are written in the version a session in
/// that phase would write, see <see cref="StoreEngine{TKey, TValue, TInput, TOutput, TContext, TFunctions}.ConditionalCopyFromDevice"/>).
/// </summary>
/// <remarks>
/// Reads a page at a time into a buffer and one record at a time when a hash chain continues on the device, so its
/// memory is two pages. Runs on its own epoch row, protected only for the synchronous steps.
/// </remarks>
internal sealed class LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly int _epochEntry;
    private readonly LogReader<TKey, TValue> _reader;
    private readonly LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions> _tracer;

    public LogCompactor(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine, int epochEntry)
    {
        _engine = engine;
        _epochEntry = epochEntry;
        _reader = new LogReader<TKey, TValue>(engine.Log, engine.Epoch, epochEntry, engine.Clock);
        _tracer = new LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions>(engine, _reader);
    }

    /// <summary>
    /// Copies the live records of [<paramref name="from"/>, <paramref name="until"/>) forward. Both are page
    /// boundaries (or the begin address) below the head address.
    /// </summary>
    public Task<CompactionResult> CopyLiveRecordsAsync(long from, long until, CancellationToken cancellationToken) =>
        LogRecord<TKey, TValue>.HasVariableKey
            ? CopyByLookupAsync(from, until, cancellationToken)
            : CopyByScanAsync(from, until, cancellationToken);

    /// <summary>
    /// Fixed-size keys: which records are dead is found by reading the log newest first, not by a device read per
    /// dead record. Pass 1 reads [from, head) from the newest page to the oldest and keeps the set of keys seen: a
    /// record whose key was seen has a newer record and is dead; the others below <paramref name="until"/> are
    /// candidates. Then the pages that left memory meanwhile are read too (keys written again: their candidates are
    /// dead). Pass 2 reads the candidates' pages oldest first and copies each whose chain, traced from the index
    /// through memory, meets no newer record of its key before the part pass 1 covered. Memory: the distinct keys of
    /// the range and the candidates' addresses, besides two pages. (FASTER's scan-based compaction keeps the range's
    /// records in a temporary store and scans the rest of the log; this scans only what left memory during the pass.)
    /// </summary>
    private async Task<CompactionResult> CopyByScanAsync(long from, long until, CancellationToken cancellationToken)
    {
        HybridLog log = _engine.Log;
        long pageMask = log.PageSize - 1L;
        var comparer = new EngineKeyComparer(_engine);
        var seen = new HashSet<TKey>(comparer);
        var candidates = new List<long>();
        var pageRecords = new List<(long Address, bool Tombstone)>();
        var result = new CompactionResult(from, until, 0, 0, 0, 0);
        long covered = Math.Max(until, log.HeadAddress & ~pageMask);
        for (long page = (covered - 1) & ~pageMask; page >= (from & ~pageMask); page -= log.PageSize)
        {
            long start = Math.Max(from, page);
            long end = Math.Min(covered, page + log.PageSize);
            await _reader.ReadPageAsync(start, end, cancellationToken).ConfigureAwait(false);
            CollectRecords(start, end, pageRecords);
            for (int i = pageRecords.Count - 1; i >= 0; i--)
            {
                (long address, bool tombstone) = pageRecords[i];
                bool newest = seen.Add(_reader.KeyAt(address));
                if (address >= until)
                {
                    continue;
                }

                result = result with { RecordsExamined = result.RecordsExamined + 1 };
                if (tombstone)
                {
                    // Every older record of its key lies below 'until' too and goes with it: the key reads as absent.
                    result = result with { TombstonesDropped = result.TombstonesDropped + 1 };
                }
                else if (newest)
                {
                    candidates.Add(address);
                }
            }

            cancellationToken.ThrowIfCancellationRequested();
        }

        // Pages that left memory while pass 1 ran are where a chain traced from the index would need the device.
        var rewritten = new HashSet<TKey>(comparer);
        for (int round = 0; round < 4; round++)
        {
            long head = log.HeadAddress & ~pageMask;
            for (long page = covered; page < head; page += log.PageSize)
            {
                await _reader.ReadPageAsync(page, page + log.PageSize, cancellationToken).ConfigureAwait(false);
                CollectRecords(page, page + log.PageSize, pageRecords);
                foreach ((long address, _) in pageRecords)
                {
                    rewritten.Add(_reader.KeyAt(address));
                }
            }

            covered = Math.Max(covered, head);
        }

        candidates.Reverse();
        long currentPage = -1;
        foreach (long address in candidates)
        {
            cancellationToken.ThrowIfCancellationRequested();
            long page = address & ~pageMask;
            if (page != currentPage)
            {
                await _reader.ReadPageAsync(Math.Max(from, page), Math.Min(until, page + log.PageSize), cancellationToken)
                    .ConfigureAwait(false);
                currentPage = page;
            }

            if (rewritten.Contains(_reader.KeyAt(address)))
            {
                continue;
            }

            int copied = await CopyIfLiveAsync(address, coveredBelow: covered, cancellationToken).ConfigureAwait(false);
            if (copied > 0)
            {
                result = result with { RecordsCopied = result.RecordsCopied + 1, BytesCopied = result.BytesCopied + copied };
            }
        }

        return result;
    }

    /// <summary>The valid records of the page buffer in [start, end), in address order.</summary>
    private void CollectRecords(long start, long end, List<(long Address, bool Tombstone)> records)
    {
        records.Clear();
        long next = start;
        while (_reader.NextRecord(ref next, end, out long address, out bool tombstone))
        {
            records.Add((address, tombstone));
        }
    }

    /// <summary>Keys compared and hashed by the store's own functions.</summary>
    private sealed class EngineKeyComparer(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine)
        : IEqualityComparer<TKey>
    {
        public bool Equals(TKey x, TKey y) => engine.KeysEqual(in x, in y);

        public int GetHashCode(TKey obj)
        {
            long hash = engine.KeyHashOf(in obj);
            return (int)(hash ^ (hash >> 32));
        }
    }

    /// <summary>
    /// Variable-length keys: each record's liveness is traced from the index, through memory and, a record at a time,
    /// the device. Memory: two pages.
    /// </summary>
    private async Task<CompactionResult> CopyByLookupAsync(long from, long until, CancellationToken cancellationToken)
    {
        HybridLog log = _engine.Log;
        long pageMask = log.PageSize - 1L;
        var result = new CompactionResult(from, until, 0, 0, 0, 0);
        for (long page = from & ~pageMask; page < until; page += log.PageSize)
        {
            long start = Math.Max(from, page);
            long end = Math.Min(until, page + log.PageSize);
            // Below the head: from the device, checked for missing bytes (a CorruptLogException stops compaction
            // before anything is dropped).
            await _reader.ReadPageAsync(start, end, cancellationToken).ConfigureAwait(false);
            long next = start;
            while (_reader.NextRecord(ref next, end, out long address, out bool tombstone))
            {
                cancellationToken.ThrowIfCancellationRequested();
                result = result with { RecordsExamined = result.RecordsExamined + 1 };
                if (tombstone)
                {
                    // Every older record of its key lies below 'until' too and goes with it: the key reads as absent.
                    result = result with { TombstonesDropped = result.TombstonesDropped + 1 };
                    continue;
                }

                int copied = await CopyIfLiveAsync(address, coveredBelow: long.MinValue, cancellationToken)
                    .ConfigureAwait(false);
                if (copied > 0)
                {
                    result = result with
                    {
                        RecordsCopied = result.RecordsCopied + 1,
                        BytesCopied = result.BytesCopied + copied,
                    };
                }
            }
        }

        return result;
    }

    /// <summary>Copies the record at <paramref name="address"/> (in the page buffer) if it is live; returns the bytes
    /// copied (0 if it was not live).</summary>
    private async ValueTask<int> CopyIfLiveAsync(long address, long coveredBelow, CancellationToken cancellationToken)
    {
        while (true)
        {
            TKey key = _reader.KeyAt(address);
            (Liveness liveness, LivenessTrace trace) = await _tracer
                .TraceAsync(key, address, newerFrom: long.MaxValue, coveredBelow, cancellationToken)
                .ConfigureAwait(false);
            if (liveness != Liveness.Live)
            {
                return 0;
            }

            CopyForwardOutcome outcome = TryCopy(address, trace.Entry, out int size);
            if (outcome != CopyForwardOutcome.NotNow)
            {
                return outcome == CopyForwardOutcome.Copied ? size : 0;
            }

            // No room at the tail yet, or a commit between IN-PROGRESS and WAIT-FLUSH: wait, then trace again.
            await _engine.Log.SpaceSignal.WaitOrTimeoutAsync(TimeSpan.FromMilliseconds(20), cancellationToken)
                .ConfigureAwait(false);
            cancellationToken.ThrowIfCancellationRequested();
            if (_engine.Log.FlushError is { } error)
            {
                throw new Devices.StorageDeviceException(
                    "Compaction stopped: writing the log to its device failed, so copies cannot be made room for.", error);
            }
        }
    }

    private CopyForwardOutcome TryCopy(long address, long tracedEntry, out int size)
    {
        LogRecord<TKey, TValue> record = _reader.PageRecordAt(address);
        size = record.Size;
        _engine.Epoch.Protect(_epochEntry);
        try
        {
            return _engine.ConditionalCopyFromDevice(record, address, tracedEntry, _epochEntry);
        }
        finally
        {
            _engine.Epoch.Unprotect(_epochEntry);
        }
    }

    public void Dispose() => _reader.Dispose();
}
