using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>
/// What each record a flush wrote was linked in front of: its previous address and its key, gathered in batches while
/// the flush walks the page for its records' checksums anyway, and taken up later by log compaction on its own thread
/// (<see cref="Compaction.SupersededKeys{TKey, TValue}"/>). A record below the safe read-only address is final: valid
/// means linked by its CAS, in front of the record its previous address names.
/// </summary>
/// <remarks>
/// The batches are compaction's to provide (<see cref="Provide"/>, up to a memory budget) and to empty; a flush that
/// finds none free notes nothing, so a store that never compacts pays one look at an empty stack per flush. A flush
/// takes and hands back a batch under a lock, once per page it writes; the stack and the queue are sized for every
/// batch at once, so neither allocates on the flushing thread.
/// </remarks>
internal sealed class FlushedLinks
{
    private readonly Lock _gate = new();
    private readonly Stack<Batch> _free;
    private readonly Queue<Batch> _filled;
    private readonly int _batchBytes;
    private readonly int _maxBatches;
    private int _batches;
    // The free batches, read without the lock by flushes that find none.
    private int _freeCount;

    /// <param name="linkBytes">The bytes of one link: the previous address and the key.</param>
    /// <param name="linksPerBatch">The most links a batch holds: the most records one flush (a page at most) walks.</param>
    /// <param name="maxBytes">The most memory the batches take.</param>
    public FlushedLinks(int linkBytes, int linksPerBatch, long maxBytes)
    {
        LinkBytes = linkBytes;
        _batchBytes = checked(linkBytes * linksPerBatch);
        _maxBatches = (int)Math.Clamp(maxBytes / _batchBytes, 2, 1024);
        _free = new Stack<Batch>(_maxBatches);
        _filled = new Queue<Batch>(_maxBatches);
    }

    /// <summary>The bytes of one link.</summary>
    public int LinkBytes { get; }

    /// <summary>Whether two batches of <paramref name="linksPerBatch"/> links (the fewest that let flushes and
    /// compaction take turns) fit in <paramref name="maxBytes"/>.</summary>
    public static bool Fits(int linkBytes, int linksPerBatch, long maxBytes) => 2L * linkBytes * linksPerBatch <= maxBytes;

    /// <summary>How many filled batches wait for compaction.</summary>
    public int FilledCount
    {
        get
        {
            lock (_gate)
            {
                return _filled.Count;
            }
        }
    }

    /// <summary>A flush's: an empty batch, or null if compaction provided none or has not emptied them yet.</summary>
    public Batch? TakeFree()
    {
        // A store that does not compact (or whose compaction has not taken the batches up) never takes the lock.
        if (Volatile.Read(ref _freeCount) == 0)
        {
            return null;
        }

        lock (_gate)
        {
            if (!_free.TryPop(out Batch? batch))
            {
                return null;
            }

            _freeCount--;
            return batch;
        }
    }

    private void PushFree(Batch batch)
    {
        _free.Push(batch);
        Volatile.Write(ref _freeCount, _freeCount + 1);
    }

    /// <summary>A flush's: hands back the batch it took, for compaction to take up.</summary>
    public void Publish(Batch batch)
    {
        lock (_gate)
        {
            if (batch.Count == 0)
            {
                PushFree(batch);
            }
            else
            {
                _filled.Enqueue(batch);
            }
        }
    }

    /// <summary>Compaction's: the oldest filled batch, to read and then <see cref="Return"/>.</summary>
    public bool TryTakeFilled([NotNullWhen(true)] out Batch? batch)
    {
        lock (_gate)
        {
            return _filled.TryDequeue(out batch);
        }
    }

    /// <summary>Compaction's: a batch it has read, emptied for the next flush.</summary>
    public void Return(Batch batch)
    {
        batch.Count = 0;
        lock (_gate)
        {
            PushFree(batch);
        }
    }

    /// <summary>Compaction's: makes the batches up to the budget (on its thread, so that no flush allocates).</summary>
    public void Provide()
    {
        while (_batches < _maxBatches)
        {
            var batch = new Batch(_batchBytes, LinkBytes);
            lock (_gate)
            {
                PushFree(batch);
            }

            _batches++;
        }
    }

    /// <summary>Links of one flush, packed: a previous address then a key, <see cref="LinkBytes"/> each.</summary>
    internal sealed class Batch(int bytes, int linkBytes)
    {
        private readonly byte[] _bytes = new byte[bytes];

        /// <summary>How many links it holds.</summary>
        public int Count { get; set; }

        /// <summary>Adds a link: the record of <paramref name="key"/> was linked in front of the one at
        /// <paramref name="previousAddress"/>.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public void Add<TKey>(long previousAddress, in TKey key)
            where TKey : unmanaged
        {
            int at = Count * linkBytes;
            System.Diagnostics.Debug.Assert(at + linkBytes <= _bytes.Length, "A batch holds a page's records.");
            Unsafe.WriteUnaligned(ref _bytes[at], previousAddress);
            Unsafe.WriteUnaligned(ref _bytes[at + sizeof(long)], key);
            Count++;
        }

        /// <summary>Starts loading the line of the link at <paramref name="index"/>, if the batch has one there.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public unsafe void Prefetch(int index)
        {
            int at = index * linkBytes;
            if ((uint)at < (uint)_bytes.Length)
            {
                // A hint: should the array move meanwhile, the line loaded is merely of no use.
                Utilities.CacheLine.Prefetch(Unsafe.AsPointer(ref _bytes[at]));
            }
        }

        /// <summary>The link at <paramref name="index"/>.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public long PreviousAddressAt<TKey>(int index, out TKey key)
            where TKey : unmanaged
        {
            int at = index * linkBytes;
            key = Unsafe.ReadUnaligned<TKey>(ref _bytes[at + sizeof(long)]);
            return Unsafe.ReadUnaligned<long>(ref _bytes[at]);
        }
    }
}
