using System.Runtime.CompilerServices;
using HybridKV.Utilities;
using HybridKV.Log;
using HybridKV.Operations;

namespace HybridKV.Compaction;

/// <summary>
/// Compaction of the oldest part of the log (F2 §4, FASTER's lookup-based Compact): every live record of
/// [begin, until) is copied to the tail, tombstones and expired values are dropped, and then the begin address can
/// move to <c>until</c>. A record is copied only while the index still leads to it with no newer record of its key, by a CAS on
/// the entry it traced from, so a record superseded while compaction runs is never brought back; a copy changes no
/// value, so a crash at any point recovers the same data (CPR holds: copies are written in the version a session in
/// that phase would write, see <see cref="StoreEngine{TKey, TValue, TInput, TOutput, TContext, TFunctions}.ConditionalCopyFromDevice"/>).
/// </summary>
/// <remarks>
/// Reads a page at a time into a buffer (the next one read ahead meanwhile) and one record at a time when a hash chain
/// continues on the device, so its memory is three pages. Runs on its own epoch row, protected only for the
/// synchronous steps.
/// </remarks>
internal sealed class LogCompactor<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly int _epochEntry;
    private readonly LogReader<TKey, TValue> _reader;
    private readonly ContinuationThread? _thread;
    private readonly LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions> _tracer;
    private DeviceChecks<TKey> _checks = new();
    private readonly CopyReservation _reservation = new();
    private DeviceChecks<TKey> _lateChecks = new();
    private readonly ChecksAhead<TKey> _checksAhead = new();
    private readonly DevicePageKeys<TKey, TValue> _pageKeys;
    private readonly CandidateRecords<TKey, TValue> _candidates = new();
    // Checks whose record at the cursor was another key's: they go on down the chain, read a record at a time.
    private List<DeviceChecks<TKey>.Check> _followUps = [];
    private List<DeviceChecks<TKey>.Check> _nextFollowUps = [];
    // Checks of pages with few of them, read a record at a time with those of other such pages.
    private readonly List<DeviceChecks<TKey>.Check> _sparse = [];
    private readonly List<long> _singleReads = [];
    // Where each record of the page's index entry led when it was looked up, a few records ahead of its trace.
    private long[] _chainHeads = new long[1 << 10];
    // Where the running compaction's walk of its range has got to.
    private long _scannedTo;

    /// <param name="engine">The store's engine.</param>
    /// <param name="epochEntry">The compaction's epoch row.</param>
    /// <param name="thread">Where a compaction goes on after each of its device reads (or null: where the read
    /// completes).</param>
    public LogCompactor(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine, int epochEntry,
        ContinuationThread? thread)
    {
        _engine = engine;
        _epochEntry = epochEntry;
        _thread = thread;
        _reader = new LogReader<TKey, TValue>(engine.Log, engine.Epoch, epochEntry, engine.Clock, resumeOn: thread);
        _tracer = new LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions>(engine, _reader);
        _pageKeys = new DevicePageKeys<TKey, TValue>(engine.Log.PageSize);
    }

    /// <summary>
    /// Copies the live records of [<paramref name="from"/>, <paramref name="until"/>) forward. Both are page
    /// boundaries (or the begin address) below the head address.
    /// </summary>
    public Task<CompactionResult> CopyLiveRecordsAsync(long from, long until, CancellationToken cancellationToken) =>
        LogRecord<TKey, TValue>.HasVariableKey
            ? CopyByLookupAsync(from, until, cancellationToken)
            : CopyByIndexAsync(from, until, cancellationToken);

    /// <summary>
    /// Fixed-size keys: liveness from the index, with no device read per record. Reads [from, until) oldest first, a
    /// page at a time; drops at once each record that a flushed record of its own key was linked in front of
    /// (<see cref="SupersededKeys{TKey, TValue}"/>), and traces each other record's chain from its key's index entry
    /// through memory (under protection, a batch of records at a time): a record the entry leads to is live (to be copied); one the chain passes below
    /// without meeting is dead; a chain that continues on the device at a newer record becomes a check
    /// (<see cref="DeviceChecks{TKey}"/>): the record at the cursor has the key (dead), or it is another key sharing
    /// the entry (a tag collision, rare: copied if the exact trace finds it live). A check whose cursor lies further
    /// on in the range is answered when the range's page holding it is read (<see cref="ChecksAhead{TKey}"/>); the
    /// others, put in page order after the copies (with those the copies add), by one read per page they touch (or a
    /// read per record where a page has only a few). The device's bandwidth is what these reads are bound by: each
    /// page is read once per compaction. The live records were kept when found
    /// (<see cref="CandidateRecords{TKey, TValue}"/>) and are copied in batches, their buckets prefetched, each linked
    /// by a CAS only if the index still leads to it. Memory: three pages, the checks (at most twice
    /// <see cref="DeviceChecks{TKey}.Capacity"/>; a full batch is answered before the range goes on) and the kept
    /// records (at most <see cref="CandidateRecords{TKey, TValue}.Capacity"/>; the rest are read again); across
    /// compactions, the keys of the device pages the check passes read (at most
    /// <see cref="DevicePageKeys{TKey, TValue}.MaxBytes"/>), which answer a check at once.
    /// </summary>
    /// <remarks>
    /// A record found dead stays dead: a newer record of its key exists and records never come back. A copy is linked
    /// only by <c>ConditionalCopyFromDevice</c>, which re-checks the entry. The earlier version (a set of every key of
    /// [from, head), read newest first) read the whole device log per compaction and hashed every record of it; at
    /// 8M upserts/s it finished one compaction in 10 s.
    /// </remarks>
    private async Task<CompactionResult> CopyByIndexAsync(long from, long until, CancellationToken cancellationToken)
    {
        HybridLog log = _engine.Log;
        long pageMask = log.PageSize - 1L;
        var pageRecords = new List<(long Address, bool NoValue, long Hash)>();
        var toCopy = new List<long>();
        // Records whose chain meets another key's record on the device (a tag collision, rare) take the exact trace.
        var exact = new List<long>();
        var counts = new Counts();
        // A compaction that failed may have left checks of its range behind.
        _checks.Clear();
        _lateChecks.Clear();
        _followUps.Clear();
        _nextFollowUps.Clear();
        _sparse.Clear();
        _checksAhead.Start(from, until, System.Numerics.BitOperations.Log2((ulong)log.PageSize));
        _pageKeys.DropBelow(from);
        _candidates.Clear();
        _scannedTo = from;
        for (long page = from & ~pageMask; page < until; page += log.PageSize)
        {
            long start = Math.Max(from, page);
            long end = Math.Min(until, page + log.PageSize);
            TakeUpLinks();
            bool fromDevice = await _reader.ReadPageAsync(start, end, cancellationToken).ConfigureAwait(false);
            if (page + log.PageSize < until)
            {
                _reader.ReadAhead(page + log.PageSize, Math.Min(until, page + (2L * log.PageSize)), cancellationToken);
            }

            counts.Examined += CollectRecords(start, end, pageRecords);
            _scannedTo = end;
            for (int batch = 0; batch < pageRecords.Count; batch += TraceBatch)
            {
                // Protected for a batch of index look-ups, so that page turns and index phases are never held long.
                int batchEnd = Math.Min(batch + TraceBatch, pageRecords.Count);
                _reader.Protect();
                try
                {
                    if (batch == 0)
                    {
                        // The first records' buckets and chain heads, as the records before them would have.
                        EnsureChainHeads(pageRecords.Count);
                        for (int i = -BucketsAhead; i < 0; i++)
                        {
                            PrefetchAhead(pageRecords, i);
                        }
                    }

                    for (int i = batch; i < batchEnd; i++)
                    {
                        PrefetchAhead(pageRecords, i);
                        (long address, bool noValue, _) = pageRecords[i];
                        counts.Examined++;
                        if (noValue)
                        {
                            // A delete marker or an expired value: every older record of its key lies below 'until'
                            // too and goes with it, so the key reads as absent.
                            counts.TombstonesDropped++;
                            continue;
                        }

                        TKey key = _reader.KeyAt(address);
                        long entry = _chainHeads[i];
                        var trace = new LivenessTrace(entry, entry);
                        switch (entry == LogAddress.Invalid ? Liveness.Superseded
                                    : _engine.TraceLiveInMemory(in key, address, long.MaxValue, ref trace))
                        {
                            case Liveness.Live when !_candidates.IsFull:
                                _candidates.Add(address, _reader.PageBytesAt(address, _reader.PageRecordAt(address).Size));
                                break;
                            case Liveness.Live:
                                toCopy.Add(address);
                                break;
                            case Liveness.OnDevice when _pageKeys.TryGetKey(trace.Cursor, out TKey newer) &&
                                                        _engine.KeysEqual(in newer, in key):
                                // A newer record of its key, as the check pass would have read: dead.
                                break;
                            case Liveness.OnDevice when !_checksAhead.TryAdd(trace.Cursor, address, in key):
                                _checks.Add(trace.Cursor, address, in key);
                                break;
                        }
                    }
                }
                finally
                {
                    _reader.Unprotect();
                }
            }

            AnswerChecksAhead(page, fromDevice, exact);

            if (_checks.IsFull)
            {
                await AnswerChecksAsync(exact, cancellationToken).ConfigureAwait(false);
            }

            cancellationToken.ThrowIfCancellationRequested();
        }

        // The range's checks are answered, by one read of each page their cursors touch, while the kept records are
        // copied: the one waits for the device, the other for the processor (the copies took 12-20 ms of a compaction,
        // the checks 40-55). Both go on on the compaction's thread, the copies letting the checks' continuations run
        // between batches. Only the checks use the reader's buffers meanwhile, and they never protect (their pages
        // lie below the head); the copies' own checks (a key written again since, its newer record already on the
        // device) are kept apart and answered after.
        Task checking = AnswerChecksAsync(exact, cancellationToken);
        // Copies open pages at the tail, so writers a compaction holds back (HybridLog.WriterHold) would write into
        // them: the hold lets writers add as much as is copied, and holds them at the limit again once it is done.
        log.PauseHold(((long)_candidates.Count + toCopy.Count) * LogRecord<TKey, TValue>.MaxFixedSize);
        try
        {
            for (int next = 0; next < _candidates.Count;)
            {
                TakeUpLinks();
                next = CopyCandidates(next, ref counts, out Task? space);
                if (space is not null)
                {
                    await WaitForRoomAsync(space, cancellationToken).ConfigureAwait(false);
                }
                else if (_thread is not null)
                {
                    await _thread.YieldIfOthersWait();
                }
            }
        }
        catch
        {
            // The checks still read into the reader's buffers: they end before the failure goes on.
            await OnThread(Task.WhenAny(checking));
            throw;
        }

        await OnThread(checking);
        _candidates.Clear();
        toCopy.Sort();
        long currentPage = -1;
        foreach (long address in toCopy)
        {
            currentPage = await ReadPageHoldingAsync(address, currentPage, from, until, cancellationToken)
                .ConfigureAwait(false);
            counts.Add(await CopyOrCheckAsync(address, cancellationToken).ConfigureAwait(false));
        }

        // The copies' checks, then the follow-ups of all of them; the few that reach their record past another key's
        // take the exact trace. Writers wait again meanwhile, and until the caller has moved the begin address.
        log.ResumeHold();
        (_checks, _lateChecks) = (_lateChecks, _checks);
        await AnswerChecksAsync(exact, cancellationToken).ConfigureAwait(false);
        await AnswerFollowUpsAsync(exact, cancellationToken).ConfigureAwait(false);
        exact.Sort();
        foreach (long address in exact)
        {
            await _reader.ReadRecordAsync(address, cancellationToken).ConfigureAwait(false);
            _reader.ThrowIfDamaged(_reader.Record, address, RecordBytesLeftInPage(address));
            // Kept apart from the reader's buffers, which the trace reads the chain into.
            _candidates.Clear();
            _candidates.Add(address, _reader.RecordBytes);
            counts.Add(await CopyIfLiveAsync(address, candidate: 0, coveredBelow: long.MinValue, cancellationToken)
                .ConfigureAwait(false));
        }

        _candidates.Clear();
        return new CompactionResult(from, until, counts.Examined, counts.Copied, counts.BytesCopied, counts.TombstonesDropped);
    }

    private void EnsureChainHeads(int records)
    {
        if (_chainHeads.Length < records)
        {
            _chainHeads = new long[Math.Max(records, 2 * _chainHeads.Length)];
        }
    }

    /// <summary>
    /// Under protection, before the trace of record <paramref name="i"/>: starts loading the bucket of the record
    /// <see cref="BucketsAhead"/> on, and looks up the entry of the one <see cref="ChainHeadsAhead"/> on (its bucket
    /// loaded by now), keeping where it leads and starting to load the record there: each trace then starts from its
    /// entry with the record in cache. Waiting for the chain head, a record anywhere in the log's memory, was 40 % of
    /// the scan's time; its misses now overlap those of the records around.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void PrefetchAhead(List<(long Address, bool NoValue, long Hash)> records, int i)
    {
        if (i + BucketsAhead < records.Count)
        {
            _engine.Index.Prefetch(new Index.KeyHash(records[i + BucketsAhead].Hash));
        }

        if (i + ChainHeadsAhead < records.Count && i + ChainHeadsAhead >= 0)
        {
            long chainHead = _engine.FindChainHead(new Index.KeyHash(records[i + ChainHeadsAhead].Hash));
            _chainHeads[i + ChainHeadsAhead] = chainHead;
            if (chainHead < _engine.Log.HeadAddress)
            {
                // A chain head on the device is most often the key's newest record, answered from its page's keys.
                _pageKeys.Prefetch(chainHead);
            }
        }
    }

    /// <summary>How many records ahead of its trace a record's bucket is prefetched.</summary>
    private const int BucketsAhead = 16;

    /// <summary>How many records ahead of its trace the record its key's entry leads to is prefetched.</summary>
    private const int ChainHeadsAhead = 8;

    /// <summary>
    /// Answers the checks held for <paramref name="page"/> of the range, which the reader holds: those of earlier
    /// pages' records, and of this page's own, whose cursor lies in it.
    /// </summary>
    private void AnswerChecksAhead(long page, bool fromDevice, List<long> collisions)
    {
        for (int i = _checksAhead.FirstOf(page); i >= 0;)
        {
            int next = _checksAhead.Next(i);
            if (next >= 0)
            {
                _reader.PrefetchPageRecord(_checksAhead[next].Cursor);
            }

            ref readonly DeviceChecks<TKey>.Check check = ref _checksAhead[i];
            Answer(check, _reader.PageRecordAt(check.Cursor), fromDevice, collisions);
            i = next;
        }

        _checksAhead.Answered(page);
    }

    /// <summary>
    /// Copies the kept candidates from <paramref name="first"/> on, a batch under one protection with their buckets
    /// prefetched. Returns where to go on: the batch's end, or the candidate that found no room at the tail, with
    /// <paramref name="space"/> to wait for first.
    /// </summary>
    private int CopyCandidates(int first, ref Counts counts, out Task? space)
    {
        space = null;
        int end = Math.Min(first + TraceBatch, _candidates.Count);
        VarBytes scratch = default;
        // Records of both fixed sizes may be kept (with and without an expiry word): a room is for one size, and is
        // taken for as many of that size as the batch has left.
        int plain = 0;
        for (int i = first; i < end; i++)
        {
            _engine.Index.Prefetch(new Index.KeyHash(_engine.KeyHashOf(in _candidates.RecordAt(i).KeyRef(ref scratch))));
            plain += IsPlain(i) ? 1 : 0;
        }

        int expiring = end - first - plain;
        _reader.Protect();
        try
        {
            for (int i = first; i < end; i++)
            {
                // The batch's copies take their room at the tail together (CopyReservation).
                _reservation.Expected = IsPlain(i) ? plain-- : expiring--;
                if (!TryCopyIfLiveInMemory(_candidates.RecordAt(i), _candidates.AddressAt(i), ref counts, out space,
                        _reservation))
                {
                    return i;
                }
            }
        }
        finally
        {
            _engine.ReleaseReservation(_reservation);
            _reader.Unprotect();
        }

        return end;
    }

    /// <summary>Whether candidate <paramref name="i"/> is of the plain fixed size (no expiry word): a copy room holds
    /// records of one size.</summary>
    private bool IsPlain(int i) => _candidates.RecordAt(i).Size == LogRecord<TKey, TValue>.FixedSize;

    /// <summary>
    /// Under protection: copies <paramref name="source"/>, found live at <paramref name="address"/>, if the chain from
    /// its key's entry through memory still leads to it; a chain that continues on the device (the key was written
    /// again since, and that record left memory) becomes a check instead of a device read. False, with
    /// <paramref name="space"/> to wait for, when the tail had no room: the caller tries again after.
    /// </summary>
    private bool TryCopyIfLiveInMemory(LogRecord<TKey, TValue> source, long address, ref Counts counts, out Task? space,
        CopyReservation? reservation = null)
    {
        space = null;
        VarBytes scratch = default;
        ref TKey key = ref source.KeyRef(ref scratch);
        LivenessTrace trace = default;
        switch (_engine.TraceLiveInMemory(in key, address, long.MaxValue, ref trace))
        {
            case Liveness.OnDevice:
                _lateChecks.Add(trace.Cursor, address, in key);
                return true;
            case Liveness.Live:
                break;
            default:
                return true;
        }

        Task room = _engine.Log.SpaceSignal;
        switch (_engine.ConditionalCopyFromDevice(source, address, trace.Entry, _epochEntry, reservation))
        {
            case CopyForwardOutcome.Copied:
                counts.Add(source.Size);
                return true;
            case CopyForwardOutcome.NotNow:
                space = room;
                return false;
            default:
                return true;
        }
    }

    /// <summary>Reads the part of [from, until) in the page holding <paramref name="address"/>, unless that page is
    /// <paramref name="currentPage"/> (sorted addresses read each page once); returns the page now read.</summary>
    private async ValueTask<long> ReadPageHoldingAsync(
        long address, long currentPage, long from, long until, CancellationToken cancellationToken)
    {
        int pageSize = _engine.Log.PageSize;
        long page = address & ~(pageSize - 1L);
        if (page != currentPage)
        {
            await _reader.ReadPageAsync(Math.Max(from, page), Math.Min(until, page + pageSize), cancellationToken)
                .ConfigureAwait(false);
        }

        return page;
    }

    /// <summary>
    /// <see cref="TryCopyIfLiveInMemory"/> for the record at <paramref name="address"/> in the page buffer, waiting for
    /// room at the tail as long as it takes. Returns the bytes copied.
    /// </summary>
    private async ValueTask<int> CopyOrCheckAsync(long address, CancellationToken cancellationToken)
    {
        while (true)
        {
            Counts one = default;
            bool done;
            Task? space;
            _reader.Protect();
            try
            {
                done = TryCopyIfLiveInMemory(_reader.PageRecordAt(address), address, ref one, out space);
            }
            finally
            {
                _reader.Unprotect();
            }

            if (done)
            {
                return (int)one.BytesCopied;
            }

            await WaitForRoomAsync(space!, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>No room at the tail yet, or a commit between IN-PROGRESS and WAIT-FLUSH: waits a little, then the
    /// caller traces again.</summary>
    private async Task WaitForRoomAsync(Task space, CancellationToken cancellationToken)
    {
        await OnThread(space.WaitOrTimeoutAsync(TimeSpan.FromMilliseconds(20), cancellationToken));
        cancellationToken.ThrowIfCancellationRequested();
        if (_engine.Log.FlushError is { } error)
        {
            throw new Devices.StorageDeviceException(
                "Compaction stopped: writing the log to its device failed, so copies cannot be made room for.", error);
        }
    }

    /// <summary>Awaits <paramref name="task"/>, going on on the compaction's thread (see
    /// <see cref="ContinuationThread"/>): the reader's reads do so themselves, this is for everything else the
    /// compaction waits for.</summary>
    private ContinuationThread.ResumeAwaitable OnThread(Task task) => ContinuationThread.ResumeOn(_thread, new ValueTask(task));

    /// <summary>Records traced under one protection.</summary>
    private const int TraceBatch = 64;

    /// <summary>What a compaction counted (a mutable local: a <see cref="CompactionResult"/> per record would
    /// allocate).</summary>
    private struct Counts
    {
        public long Examined;
        public long Copied;
        public long BytesCopied;
        public long TombstonesDropped;

        /// <summary>Counts a copy of <paramref name="bytes"/> (none if 0).</summary>
        public void Add(int bytes)
        {
            if (bytes > 0)
            {
                Copied++;
                BytesCopied += bytes;
            }
        }
    }

    /// <summary>
    /// Answers the checks held: reads each page their cursors touch once (from memory if it is still there) and looks
    /// at the record at each cursor. The same key there: dead. Otherwise the record shares its index entry with
    /// another key; its address goes to <paramref name="collisions"/>, to be copied if the exact trace finds it live.
    /// </summary>
    private async Task AnswerChecksAsync(List<long> collisions, CancellationToken cancellationToken)
    {
        HybridLog log = _engine.Log;
        long pageMask = log.PageSize - 1L;
        _checks.SortByPage(System.Numerics.BitOperations.Log2((ulong)log.PageSize));
        int recordSize = LogRecord<TKey, TValue>.MaxFixedSize;
        int first = 0;
        int last = PageGroupEnd(first, out long low, out long high);
        while (first < _checks.Count)
        {
            long page = low & ~pageMask;
            int nextLast = PageGroupEnd(last, out long nextLow, out long nextHigh);
            if (last - first <= SparseChecks)
            {
                // A page read would bring megabytes for a few records: each is read alone, with those of other
                // such pages at once.
                for (int i = first; i < last; i++)
                {
                    _sparse.Add(_checks[i]);
                }

                if (_sparse.Count > LogReader<TKey, TValue>.RecordSlots - SparseChecks)
                {
                    await AnswerSinglyAsync(_sparse, collisions, cancellationToken).ConfigureAwait(false);
                }
            }
            else
            {
                TakeUpLinks();
                bool keep = KeepsKeysOf(page, last - first);
                long end = keep ? page + log.PageSize : Math.Min(page + log.PageSize, high + recordSize);
                bool fromDevice = await _reader.ReadPageAsync(low, end, cancellationToken).ConfigureAwait(false);
                if (nextLast - last > SparseChecks)
                {
                    long nextPage = nextLow & ~pageMask;
                    _reader.ReadAhead(nextLow, KeepsKeysOf(nextPage, nextLast - last) ? nextPage + log.PageSize
                        : Math.Min(nextPage + log.PageSize, nextHigh + recordSize), cancellationToken);
                }

                if (keep && fromDevice)
                {
                    _pageKeys.Keep(page, end, _reader);
                }

                for (int i = first; i < last; i++)
                {
                    if (i + PrefetchDistance < last)
                    {
                        _reader.PrefetchPageRecord(_checks[i + PrefetchDistance].Cursor);
                    }

                    ref readonly DeviceChecks<TKey>.Check check = ref _checks[i];
                    Answer(check, _reader.PageRecordAt(check.Cursor), fromDevice, collisions);
                }
            }

            (first, last, low, high) = (last, nextLast, nextLow, nextHigh);
            cancellationToken.ThrowIfCancellationRequested();
        }

        await AnswerSinglyAsync(_sparse, collisions, cancellationToken).ConfigureAwait(false);
        _checks.Clear();
    }

    /// <summary>
    /// Answers the follow-ups (checks that met another key's record sharing the entry) and theirs in turn, each round
    /// reading its records at once, until every one found its key (dead), left the chain below its record (dead), or
    /// reached it (live, to <paramref name="collisions"/>). A chain walks a few records of the other key; tracing
    /// each collision again from the index, one read at a time, cost a compaction up to 40 ms.
    /// </summary>
    private async Task AnswerFollowUpsAsync(List<long> collisions, CancellationToken cancellationToken)
    {
        while (_followUps.Count > 0)
        {
            (_followUps, _nextFollowUps) = (_nextFollowUps, _followUps);
            _followUps.Clear();
            await AnswerSinglyAsync(_nextFollowUps, collisions, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Answers <paramref name="checks"/> by reading the record at each cursor alone, a batch of
    /// <see cref="LogReader{TKey, TValue}.RecordSlots"/> at once, and empties the list. Follow-ups go to
    /// <c>_followUps</c>.</summary>
    private async Task AnswerSinglyAsync(
        List<DeviceChecks<TKey>.Check> checks, List<long> collisions, CancellationToken cancellationToken)
    {
        for (int first = 0; first < checks.Count; first += LogReader<TKey, TValue>.RecordSlots)
        {
            int count = Math.Min(LogReader<TKey, TValue>.RecordSlots, checks.Count - first);
            _singleReads.Clear();
            for (int i = 0; i < count; i++)
            {
                _singleReads.Add(checks[first + i].Cursor);
            }

            await _reader.ReadRecordsAsync(_singleReads, cancellationToken).ConfigureAwait(false);
            for (int i = 0; i < count; i++)
            {
                Answer(checks[first + i], _reader.SlotRecord(i), fromDevice: true, collisions);
            }
        }

        checks.Clear();
    }

    /// <summary>
    /// Answers <paramref name="check"/> from <paramref name="record"/>, read at its cursor: the record's key there, or a
    /// chain that passed below it, is dead. Another key's record sharing the entry (a tag collision) sends the check on
    /// down the chain as a follow-up; a chain that reached the record goes to <paramref name="collisions"/>, whose
    /// exact trace from the index copies it if it is still live.
    /// </summary>
    private void Answer(in DeviceChecks<TKey>.Check check, LogRecord<TKey, TValue> record, bool fromDevice,
        List<long> collisions)
    {
        if (fromDevice)
        {
            _reader.ThrowIfDamaged(record, check.Cursor, RecordBytesLeftInPage(check.Cursor));
        }

        var trace = new LivenessTrace(LogAddress.Invalid, check.Cursor);
        TKey key = check.Key;
        switch (_engine.TraceLiveOnDevice(in key, check.Address, long.MaxValue, record, ref trace))
        {
            case Liveness.OnDevice:
                _followUps.Add(check with { Cursor = trace.Cursor });
                break;
            case Liveness.Live:
                collisions.Add(check.Address);
                break;
        }
    }

    /// <summary>Whether the check pass reads the whole page at <paramref name="page"/> and keeps its keys
    /// (<see cref="DevicePageKeys{TKey, TValue}"/>): a page wholly on the device not held yet, with
    /// <paramref name="checks"/> enough for its size (<see cref="KeepKeysDensity"/>), while there is room.</summary>
    private bool KeepsKeysOf(long page, int checks) =>
        (long)checks * KeepKeysDensity >= _pageKeys.SlotsPerPage && !_pageKeys.Holds(page) && _pageKeys.HasRoom &&
        page + _engine.Log.PageSize <= _engine.Log.HeadAddress;

    /// <summary>
    /// A page's keys are kept when it has at least one check for this many of its records: keeping walks every record
    /// of the page, where the checks alone read only theirs. With the flushes' notes answering most records, the
    /// uniform soak's compactions had about 70 checks a page on 7 pages of a 20 MiB range, and walked those pages'
    /// 230,000 records (a third of the range's) for them.
    /// </summary>
    private const int KeepKeysDensity = 64;

    /// <summary>At most this many checks on one page are answered by reading their records alone.</summary>
    private const int SparseChecks = 16;

    /// <summary>How many checks ahead the record at a check's cursor is prefetched from the page buffer.</summary>
    private const int PrefetchDistance = 8;

    /// <summary>The end of the checks (sorted by page) from <paramref name="first"/> whose cursors share its page,
    /// with the lowest and highest of those cursors.</summary>
    private int PageGroupEnd(int first, out long low, out long high)
    {
        low = long.MaxValue;
        high = long.MinValue;
        if (first >= _checks.Count)
        {
            return first;
        }

        long pageMask = _engine.Log.PageSize - 1L;
        long page = _checks[first].Cursor & ~pageMask;
        int last = first;
        while (last < _checks.Count && (_checks[last].Cursor & ~pageMask) == page)
        {
            low = Math.Min(low, _checks[last].Cursor);
            high = Math.Max(high, _checks[last].Cursor);
            last++;
        }

        return last;
    }

    /// <summary>
    /// The valid records of the page buffer in [start, end), in address order, with their keys' hashes, but for those
    /// a flushed record of their own key was linked in front of (<see cref="SupersededKeys{TKey, TValue}"/>): dead,
    /// with no look-up. Returns how many those were.
    /// </summary>
    private int CollectRecords(long start, long end, List<(long Address, bool NoValue, long Hash)> records)
    {
        records.Clear();
        var superseded = new SupersededRecords(_engine);
        long next = start;
        while (_reader.NextRecord(ref next, end, out long address, out bool noValue, ref superseded))
        {
            records.Add((address, noValue, noValue ? 0 : _engine.KeyHashOf(_reader.KeyAt(address))));
        }

        _engine.Superseded?.CountDropped(superseded.Dropped);
        return superseded.Dropped;
    }

    /// <summary>Passes over a record whose noted key is its own: a newer record of its key exists.</summary>
    private struct SupersededRecords(StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine)
        : ISkipsRecords<TKey, TValue>
    {
        public int Dropped;

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public bool Skips(long address, LogRecord<TKey, TValue> record)
        {
            VarBytes scratch = default;
            if (engine.Superseded is { } superseded && superseded.TryGetKey(address, out TKey newer) &&
                engine.KeysEqual(in newer, in record.KeyRef(ref scratch)))
            {
                Dropped++;
                return true;
            }

            return false;
        }
    }

    /// <summary>Takes up the links the flushes noted since (<see cref="SupersededKeys{TKey, TValue}.TakeUp"/>): called as
    /// a compaction goes, so that their batches are free again for the flushes meanwhile. Links to the records its walk
    /// has passed are of no more use (among them, every copy's link to the record it copied).</summary>
    private void TakeUpLinks() => _engine.Superseded?.TakeUp(Math.Max(_scannedTo, _engine.Log.BeginAddress));

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
            while (_reader.NextRecord(ref next, end, out long address, out bool noValue))
            {
                cancellationToken.ThrowIfCancellationRequested();
                result = result with { RecordsExamined = result.RecordsExamined + 1 };
                if (noValue)
                {
                    // A delete marker or an expired value: every older record of its key lies below 'until' too and
                    // goes with it, so the key reads as absent.
                    result = result with { TombstonesDropped = result.TombstonesDropped + 1 };
                    continue;
                }

                int copied = await CopyIfLiveAsync(address, candidate: -1, coveredBelow: long.MinValue, cancellationToken)
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

    /// <summary>Copies the record at <paramref name="address"/> (the <paramref name="candidate"/>th kept copy, or, for
    /// -1, in the page buffer) if it is live, tracing its chain onto the device as far as needed; returns the bytes
    /// copied (0 if it was not live).</summary>
    private async ValueTask<int> CopyIfLiveAsync(
        long address, int candidate, long coveredBelow, CancellationToken cancellationToken)
    {
        while (true)
        {
            TKey key = candidate >= 0 ? _candidates.KeyAt(candidate) : _reader.KeyAt(address);
            (Liveness liveness, LivenessTrace trace) = await _tracer
                .TraceAsync(key, address, newerFrom: long.MaxValue, coveredBelow, cancellationToken)
                .ConfigureAwait(false);
            if (liveness != Liveness.Live)
            {
                return 0;
            }

            Task space = _engine.Log.SpaceSignal;
            LogRecord<TKey, TValue> record = candidate >= 0 ? _candidates.RecordAt(candidate) : _reader.PageRecordAt(address);
            CopyForwardOutcome outcome = TryCopy(record, address, trace.Entry);
            if (outcome != CopyForwardOutcome.NotNow)
            {
                return outcome == CopyForwardOutcome.Copied ? record.Size : 0;
            }

            await WaitForRoomAsync(space, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>How many bytes of its page lie from <paramref name="address"/> on (a record cannot be longer).</summary>
    private int RecordBytesLeftInPage(long address) =>
        _engine.Log.PageSize - (int)(address & (_engine.Log.PageSize - 1L));

    private CopyForwardOutcome TryCopy(LogRecord<TKey, TValue> record, long address, long tracedEntry)
    {
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

    public void Dispose()
    {
        _reader.Dispose();
        _candidates.Dispose();
    }
}
