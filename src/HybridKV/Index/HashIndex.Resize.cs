using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace HybridKV.Index;

/// <summary>
/// Doubling the index while operations continue (FASTER appendix B). The resize status moves
/// stable → prepare-to-resize → resizing → stable, each step published before an epoch bump:
/// <list type="bullet">
/// <item>Prepare-to-resize: the new table exists. Finds still use the old table, but no entry there may be swung
/// (<see cref="TryUpdateEntry"/> refuses a slot found in this phase); an operation that must swing one starts over,
/// moving its epoch on. The bump's trigger action moves to resizing once every thread that may have found an entry
/// while the index was stable has left or refreshed. (FASTER pins chunks instead and lets these operations proceed; we
/// make them wait for one epoch drain, which keeps the operations free of any per-operation release step.)</item>
/// <item>Resizing: finds use the new table, splitting the old chunk their bucket comes from first, or waiting for the
/// thread splitting it; a background task splits the rest. No thread swings an old entry any more, so a split reads a
/// frozen chain head.</item>
/// <item>Stable on the new table; a last bump frees the old table once no thread can still be reading it.</item>
/// </list>
/// A resize and an index checkpoint exclude each other (<see cref="LockStructureAsync"/>), so a checkpoint copies one
/// table of one size.
/// </summary>
internal sealed partial class HashIndex
{
    private readonly SemaphoreSlim _structureLock = new(1, 1);
    private IndexGrowth? _growth;

    // The resize in progress; set before the status leaves stable and cleared only after the bump that frees the old
    // table, so any thread that read a non-stable status finds it.
    private ResizeWork? _resize;

    /// <summary>Lets this index grow, with what growth needs from the store.</summary>
    public void EnableGrowth(IndexGrowth growth)
    {
        _growth = growth;
        growth.Index = this;
    }

    /// <summary>Whether the index passed its automatic growth threshold and may still grow.</summary>
    public bool ShouldGrow() => _growth is { } growth && growth.ShouldGrow(Volatile.Read(ref _overflowLinked), BucketCount);

    /// <summary>
    /// Takes the index's structure: no resize starts or runs until the lease is disposed. An index checkpoint holds it
    /// while it copies the buckets, so that it copies one table.
    /// </summary>
    public async Task<StructureLease> LockStructureAsync(CancellationToken cancellationToken)
    {
        await _structureLock.WaitAsync(cancellationToken).ConfigureAwait(false);
        Debug.Assert(ResizeStatus.Phase == ResizePhase.Stable, "A resize holds the structure until it is stable.");
        return new StructureLease(_structureLock);
    }

    /// <summary>
    /// Doubles the index while operations continue, unless it has reached its maximum size.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for a running resize or checkpoint, or between attempts; once the
    /// new table is in use the resize runs to its end.</param>
    /// <returns>Whether the index grew.</returns>
    /// <exception cref="InvalidOperationException">Growth was not enabled for this index.</exception>
    public async Task<bool> GrowAsync(CancellationToken cancellationToken)
    {
        IndexGrowth growth = _growth ?? throw new InvalidOperationException("This index was not set up to grow.");
        var backoff = TimeSpan.FromMilliseconds(1);
        while (true)
        {
            bool? grew = await TryGrowOnceAsync(growth, cancellationToken).ConfigureAwait(false);
            if (grew is { } done)
            {
                return done;
            }

            // Prepare-to-resize was abandoned (some participant held its epoch too long): try again later, giving way
            // to checkpoints meanwhile.
            await Task.Delay(backoff, cancellationToken).ConfigureAwait(false);
            backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxAbandonBackoff.Ticks));
        }
    }

    /// <summary>
    /// How long prepare-to-resize may wait for the epoch before the resize gives up and the index goes back to stable:
    /// operations that must swing an entry wait while it lasts, and a participant that holds its epoch (a protected
    /// scope left idle) would otherwise stall them until it moves.
    /// </summary>
    internal static TimeSpan MaxPrepare { get; set; } = TimeSpan.FromMilliseconds(10);

    private static readonly TimeSpan MaxAbandonBackoff = TimeSpan.FromSeconds(1);

    /// <returns>Whether the index grew, or null when prepare-to-resize was abandoned.</returns>
    private async Task<bool?> TryGrowOnceAsync(IndexGrowth growth, CancellationToken cancellationToken)
    {
        await _structureLock.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            long oldCount = _bucketCount;
            if (oldCount >= growth.MaxBuckets)
            {
                return false;
            }

            long started = Stopwatch.GetTimestamp();
            ResizeWork work = CreateWork(oldCount);
            Volatile.Write(ref _resize, work);

            // Stable → prepare-to-resize. The work is published first: a thread that reads the new status finds it.
            ResizeState prepare = ResizeStatus.Next(ResizePhase.PrepareToResize);
            Volatile.Write(ref _resizeState, prepare.Word);
            long prepared = Stopwatch.GetTimestamp();
            await GateAsync(growth, ResizePhase.PrepareToResize).ConfigureAwait(false);

            // Prepare-to-resize → resizing, in the trigger action itself, so that waiting operations go on as soon as
            // the epoch allows (appendix B: "bumps the current epoch with a future trigger action to atomically set
            // the phase to resizing").
            ResizeState resizing = prepare.Next(ResizePhase.Resizing);
            long resizingAt = 0;
            Task drained = BumpAsync(growth, () =>
            {
                // A no-op if the prepare phase was abandoned meanwhile.
                if (Interlocked.CompareExchange(ref _resizeState, resizing.Word, prepare.Word) == prepare.Word)
                {
                    resizingAt = Stopwatch.GetTimestamp();
                }
            });
            if (!drained.IsCompleted &&
                await Task.WhenAny(drained, Task.Delay(MaxPrepare, CancellationToken.None)).ConfigureAwait(false) != drained &&
                Interlocked.CompareExchange(ref _resizeState, prepare.Next(ResizePhase.Stable).Word, prepare.Word) ==
                prepare.Word)
            {
                // Back to stable on the old table. Nothing reaches the new table before resizing, so it goes now;
                // the work stays published for finds that read prepare-to-resize (they use only its old table).
                FreeNewTable(work);
                return null;
            }

            await drained.ConfigureAwait(false);
            Debug.Assert(ResizeStatus.Word == resizing.Word, "The trigger moved to resizing.");
            await GateAsync(growth, ResizePhase.Resizing).ConfigureAwait(false);

            SplitRemainingChunks(work, growth);

            // Resizing → stable on the new table: the table fields first, then the status that readers check first.
            InstallNewTable(work);
            Volatile.Write(ref _resizeState, resizing.Next(ResizePhase.Stable).Word);

            // No thread that found the old table (or the work) is left once this bump's epoch is safe.
            await BumpAsync(growth, static () => { }).ConfigureAwait(false);
            FreeOldTable(work);
            Volatile.Write(ref _resize, null);

            growth.OnResized(new ResizeReport(oldCount, work.NewCount,
                Stopwatch.GetElapsedTime(prepared, resizingAt), TimeSpan.FromTicks(
                    (long)(work.LongestSplitTicks * ((double)TimeSpan.TicksPerSecond / Stopwatch.Frequency))),
                work.SplitByOperations, work.Chunks.Length, Stopwatch.GetElapsedTime(started)));
            return true;
        }
        finally
        {
            _structureLock.Release();
        }
    }

    /// <summary>
    /// Doubles the index until it has <paramref name="bucketCount"/> buckets, with no operation running (recovery,
    /// before the replay). Keys are not read: every entry goes to both new buckets, which share its chain (correct
    /// for any chain, since reads compare keys; the replay and later updates shorten them again).
    /// </summary>
    public void GrowOffline(long bucketCount)
    {
        Debug.Assert(ResizeStatus.Phase == ResizePhase.Stable, "No resize runs during recovery.");
        while (_bucketCount < bucketCount)
        {
            ResizeWork work = CreateWork(_bucketCount);
            for (long offset = 0; offset < work.OldCount; offset++)
            {
                SplitBucket(work, offset, head: long.MaxValue, begin: 0, records: null);
            }

            InstallNewTable(work);
            FreeOldTable(work);
        }
    }

    private unsafe ResizeWork CreateWork(long oldCount) => new(_buckets, oldCount, AllocateTable(oldCount * 2));

    private static unsafe void FreeNewTable(ResizeWork work) => Utilities.LargeMemory.Free(work.New);

    private unsafe void InstallNewTable(ResizeWork work)
    {
        _buckets = work.New;
        _mask = work.NewMask;
        Volatile.Write(ref _overflowLinked, Volatile.Read(ref work.NewOverflowLinked));
        Volatile.Write(ref _bucketCount, work.NewCount);
    }

    private static Task GateAsync(IndexGrowth growth, ResizePhase phase) =>
        growth.PhaseGate is { } gate ? gate(phase) : Task.CompletedTask;

    /// <summary>Bumps the epoch and completes once <paramref name="onSafe"/> has run as its trigger action.</summary>
    private static Task BumpAsync(IndexGrowth growth, Action onSafe)
    {
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        growth.Epoch.BumpCurrentEpoch(() =>
        {
            onSafe();
            done.TrySetResult();
        });
        return done.Task;
    }

    /// <summary>
    /// The bucket a find starts in while a resize is under way: the old table's in prepare-to-resize, the new table's
    /// in resizing (after the chunk it comes from has been split).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private unsafe HashBucket* BucketWhileResizing(KeyHash hash, long state)
    {
        ResizeWork? work = Volatile.Read(ref _resize);
        Debug.Assert(work is not null, "A resize status other than stable has its work published.");
        long oldOffset = hash.Offset(work.OldMask);
        if ((state & ResizeState.PhaseMask) == (long)ResizePhase.PrepareToResize)
        {
            return work.Old + oldOffset;
        }

        int chunk = (int)(oldOffset >> work.ChunkBits);
        if (Volatile.Read(ref work.Chunks[chunk]) != ResizeWork.Split)
        {
            SplitOrWait(work, chunk, byOperation: true);
        }

        return work.New + hash.Offset(work.NewMask);
    }

    /// <summary>
    /// Splits the chunk, or waits while another thread splits it. The caller is protected. Splitting never waits for
    /// the epoch or the device, so the wait is bounded by one chunk's work.
    /// </summary>
    private unsafe void SplitOrWait(ResizeWork work, int chunk, bool byOperation)
    {
        ref int status = ref work.Chunks[chunk];
        if (Interlocked.CompareExchange(ref status, ResizeWork.Splitting, ResizeWork.Unsplit) == ResizeWork.Unsplit)
        {
            long started = Stopwatch.GetTimestamp();
            try
            {
                SplitChunk(work, chunk);
            }
            catch
            {
                // A user hash function threw, or overflow buckets ran out: clear what was written (its overflow
                // buckets are lost) so that the next thread splits the chunk again.
                NativeMemory.Clear(work.New + ((long)chunk << work.ChunkBits), (nuint)(work.BucketsPerChunk * HashBucket.Bytes));
                NativeMemory.Clear(work.New + work.OldCount + ((long)chunk << work.ChunkBits),
                    (nuint)(work.BucketsPerChunk * HashBucket.Bytes));
                Volatile.Write(ref status, ResizeWork.Unsplit);
                throw;
            }

            long ticks = Stopwatch.GetTimestamp() - started;
            Utilities.Monotonic.Raise(ref work.LongestSplitTicks, ticks);
            if (byOperation)
            {
                Interlocked.Increment(ref work.SplitByOperations);
            }

            // Publishes the new buckets: a thread that reads Split reads them as written.
            Volatile.Write(ref status, ResizeWork.Split);
            Interlocked.Increment(ref work.ChunksSplit);
            return;
        }

        var spinner = new SpinWait();
        while (Volatile.Read(ref status) != ResizeWork.Split)
        {
            if (Volatile.Read(ref status) == ResizeWork.Unsplit)
            {
                // The splitter failed: try ourselves.
                SplitOrWait(work, chunk, byOperation);
                return;
            }

            spinner.SpinOnce(sleep1Threshold: -1);
        }
    }

    /// <summary>The background half of resizing: every chunk no operation has split yet, one protected stretch each.</summary>
    private void SplitRemainingChunks(ResizeWork work, IndexGrowth growth)
    {
        for (int chunk = 0; chunk < work.Chunks.Length; chunk++)
        {
            if (Volatile.Read(ref work.Chunks[chunk]) == ResizeWork.Split)
            {
                continue;
            }

            growth.Epoch.Protect(growth.EpochEntry);
            try
            {
                SplitOrWait(work, chunk, byOperation: false);
            }
            finally
            {
                growth.Epoch.Unprotect(growth.EpochEntry);
            }
        }

        Debug.Assert(Volatile.Read(ref work.ChunksSplit) == work.Chunks.Length, "Every chunk is split.");
    }

    /// <summary>Splits the old buckets of one chunk into the new table. The caller is protected and owns the chunk.</summary>
    private unsafe void SplitChunk(ResizeWork work, int chunk)
    {
        IChainReader records = _growth!.Records;
        // Read once, under protection: every record at or above it stays in memory until this thread leaves.
        long head = records.HeadAddress;
        long begin = records.BeginAddress;
        long first = (long)chunk << work.ChunkBits;
        for (long offset = first; offset < first + work.BucketsPerChunk; offset++)
        {
            SplitBucket(work, offset, head, begin, records);
        }
    }

    /// <summary>
    /// Divides the entries of old bucket <paramref name="offset"/> (and its overflow buckets) between new buckets
    /// <paramref name="offset"/> and <paramref name="offset"/> + old size. Each entry's chain mixes keys of both (they
    /// differ in the hash bit the new table adds), so each new entry points at the newest record of its own bucket,
    /// found by walking the chain in memory (appendix B). Where the walk reaches the device before it found one, the
    /// entry points where the walk stopped: a chain head shared by both buckets is always correct, since reads follow
    /// the chain and compare keys; it only leaves that chain longer. An entry whose chain holds no record of a bucket
    /// gives that bucket none; tentative entries (an insert in prepare-to-resize that will start over) are dropped.
    /// </summary>
    private unsafe void SplitBucket(ResizeWork work, long offset, long head, long begin, IChainReader? records)
    {
        var low = new Appender(work.New + offset);
        var high = new Appender(work.New + offset + work.OldCount);
        HashBucket* bucket = work.Old + offset;
        while (true)
        {
            for (int i = 0; i < HashBucket.EntryCount; i++)
            {
                var entry = new HashBucketEntry(Volatile.Read(ref bucket->Words[i]));
                if (entry.IsEmpty || entry.Tentative)
                {
                    continue;
                }

                DivideChain(entry.Address, offset, work, head, begin, records, out long lowAddress, out long highAddress);
                if (lowAddress != 0)
                {
                    Append(ref low, new HashBucketEntry(entry.Tag, lowAddress, tentative: false), work);
                }

                if (highAddress != 0)
                {
                    Append(ref high, new HashBucketEntry(entry.Tag, highAddress, tentative: false), work);
                }
            }

            long next = Volatile.Read(ref bucket->Words[HashBucket.OverflowWordIndex]) & HashBucket.OverflowIdMask;
            if (next == 0)
            {
                return;
            }

            bucket = _overflow.GetBucket(next);
        }
    }

    /// <summary>
    /// The chain heads of the two new buckets (0: no entry) for a chain starting at <paramref name="address"/>.
    /// </summary>
    private unsafe static void DivideChain(long address, long offset, ResizeWork work, long head, long begin,
        IChainReader? records, out long low, out long high)
    {
        low = 0;
        high = 0;
        long highOffset = offset + work.OldCount;
        while (low == 0 || high == 0)
        {
            if (address < begin || address < Log.LogAddress.FirstValid)
            {
                // The end of the chain: a bucket with no record so far has none at all.
                return;
            }

            if (address < head)
            {
                // On the device: its keys are unknown here, so whichever bucket is still open shares this chain.
                if (low == 0)
                {
                    low = address;
                }

                if (high == 0)
                {
                    high = address;
                }

                return;
            }

            long hash = records!.KeyHashAt(address, out long previous, out bool invalid);
            if (!invalid)
            {
                long newOffset = hash & work.NewMask;
                if (newOffset == offset && low == 0)
                {
                    low = address;
                }
                else if (newOffset == highOffset && high == 0)
                {
                    high = address;
                }
            }

            address = previous;
        }
    }

    private unsafe void Append(ref Appender appender, HashBucketEntry entry, ResizeWork work)
    {
        if (appender.Next == HashBucket.EntryCount)
        {
            long id = _overflow.Allocate();
            appender.Bucket->Words[HashBucket.OverflowWordIndex] = id;
            appender.Bucket = _overflow.GetBucket(id);
            appender.Next = 0;
            Interlocked.Increment(ref work.NewOverflowLinked);
        }

        appender.Bucket->Words[appender.Next++] = entry.Word;
    }

    /// <summary>Counts an overflow bucket linked into the table the find used, and asks for growth past the threshold.</summary>
    private void OnOverflowLinked(long state)
    {
        long phase = state & ResizeState.PhaseMask;
        if (phase == (long)ResizePhase.Resizing)
        {
            Interlocked.Increment(ref Volatile.Read(ref _resize)!.NewOverflowLinked);
            return;
        }

        long linked = Interlocked.Increment(ref _overflowLinked);
        if (phase == (long)ResizePhase.Stable && _growth is { } growth && growth.ShouldGrow(linked, _bucketCount))
        {
            growth.Request();
        }
    }

    /// <summary>
    /// Frees the old table, once no thread can reach it. Its overflow buckets are not given back for reuse: a fuzzy
    /// checkpoint may copy a reused bucket's old content (entries and link) and the bucket that newly links it, and a
    /// recovered index would then hold stale entries, or a cycle. They stay allocated until the index is disposed (at
    /// most about half the buckets' worth over all doublings, with the default threshold).
    /// </summary>
    private static unsafe void FreeOldTable(ResizeWork work) => Utilities.LargeMemory.Free(work.Old);

    private void DisposeResize()
    {
        // The store waits for a running resize before it disposes the index; a resize cannot be left half done.
        Debug.Assert(ResizeStatus.Phase == ResizePhase.Stable, "Disposing an index in the middle of a resize.");
        _structureLock.Dispose();
    }

    /// <summary>Where a split writes the next entry of a new bucket's chain.</summary>
    private unsafe struct Appender(HashBucket* bucket)
    {
        public HashBucket* Bucket = bucket;
        public int Next;
    }

    /// <summary>Holds the index's structure (no resize) until disposed.</summary>
    public readonly struct StructureLease(SemaphoreSlim held) : IDisposable
    {
        public void Dispose() => held.Release();
    }
}
