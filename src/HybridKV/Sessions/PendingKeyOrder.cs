using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// A session's pending operations in issue order, per key: an operation issued while an earlier operation of the same
/// session on the same key is pending waits behind it, so that a session's operations on one key take effect in the
/// order of their serial numbers. Reads are the exception among themselves: a read behind only running reads runs
/// too, since neither changes what the other sees; an update waits for every read before it, and every operation
/// after an update waits for it. Keys are told apart by their 64-bit hash: two keys with the same hash are ordered
/// together, which costs a wait and never a wrong result.
/// </summary>
/// <remarks>
/// Reads of one hot key used to run one after the other, each with its own device read: under zipf, with thousands of
/// operations pending, the hottest key's queue was hundreds of reads long and the session's wait for all of them was
/// as long as that queue's reads end to end (bench/README.md, issue 19). Used only by the session's exclusive stretches
/// (its caller, or its background driver), never concurrently.
/// </remarks>
internal sealed class PendingKeyOrder<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly Dictionary<long, Queue> _queues = new();

    /// <summary>How many keys have a pending operation; 0 keeps the check off the operation path.</summary>
    public int KeyCount => _queues.Count;

    /// <summary>Whether an operation of <paramref name="kind"/> on a key with this hash must wait behind a pending one.</summary>
    public bool MustWait(long keyHash, PendingKind kind) =>
        _queues.TryGetValue(keyHash, out Queue queue) && !queue.Admits(kind);

    /// <summary>Adds a newly parked operation to its key's queue.</summary>
    /// <returns><see langword="true"/> if it may run now; otherwise it is held.</returns>
    public bool Append(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrAddDefault(_queues, operation.KeyHash, out bool exists);
        if (!exists || queue.Admits(operation.Kind))
        {
            queue = queue.Running(operation.Kind);
            return true;
        }

        if (queue.FirstHeld is null)
        {
            queue = queue with { FirstHeld = operation, LastHeld = operation };
        }
        else
        {
            queue.LastHeld!.NextOnKey = operation;
            queue = queue with { LastHeld = operation };
        }

        return false;
    }

    /// <summary>
    /// A running read of <paramref name="read"/>'s key whose device read of the same record is in flight, for
    /// <paramref name="read"/> to share instead of reading the record again; or <see langword="null"/>.
    /// </summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? ReadingSameRecord(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> read) =>
        _queues.TryGetValue(read.KeyHash, out Queue queue) && queue.Reading is { } reading &&
        reading.Storage.RecordAddress == read.Storage.RecordAddress
            ? reading
            : null;

    /// <summary>A running read of its key started a device read: later reads of the same record may share it.</summary>
    public void ReadStarted(PendingOperation<TKey, TValue, TInput, TOutput, TContext> read)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrNullRef(_queues, read.KeyHash);
        Debug.Assert(!Unsafe.IsNullRef(ref queue), "a read that starts a device read is running");
        queue = queue with { Reading = read };
    }

    /// <summary>The device read of <paramref name="read"/> landed: no later read can share it.</summary>
    public void ReadLanded(PendingOperation<TKey, TValue, TInput, TOutput, TContext> read)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrNullRef(_queues, read.KeyHash);
        if (!Unsafe.IsNullRef(ref queue) && queue.Reading == read)
        {
            queue = queue with { Reading = null };
        }
    }

    /// <summary>
    /// Removes a finished operation, one that was running. When it was the last running one of its key, the operations
    /// held next may run: the first held, and the reads right behind it if it is a read.
    /// </summary>
    /// <returns>How many operations it released into <paramref name="released"/>.</returns>
    public int Remove(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation,
        Queue<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> released)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrNullRef(_queues, operation.KeyHash);
        Debug.Assert(!Unsafe.IsNullRef(ref queue) && queue.RunningCount > 0, "only a running operation finishes");
        queue = queue with { RunningCount = queue.RunningCount - 1 };
        if (queue.RunningCount > 0)
        {
            return 0;
        }

        if (queue.FirstHeld is null)
        {
            _queues.Remove(operation.KeyHash);
            return 0;
        }

        int count = 0;
        while (queue.FirstHeld is { } next && (count == 0 || (queue.RunningReads && next.Kind == PendingKind.Read)))
        {
            queue = queue.Running(next.Kind) with { FirstHeld = next.NextOnKey };
            next.NextOnKey = null;
            released.Enqueue(next);
            count++;
        }

        if (queue.FirstHeld is null)
        {
            queue = queue with { LastHeld = null };
        }

        return count;
    }

    /// <param name="RunningCount">Operations of the key that run (a device read, a retry, a wait for log space).</param>
    /// <param name="RunningReads">Whether those are reads only (or none run).</param>
    /// <param name="FirstHeld">The oldest held operation; the held ones are linked by their <c>NextOnKey</c>.</param>
    /// <param name="LastHeld">The newest held operation.</param>
    /// <param name="Reading">The running read whose device read is in flight, if it can be shared.</param>
    private readonly record struct Queue(
        int RunningCount,
        bool RunningReads,
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? FirstHeld,
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? LastHeld,
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? Reading)
    {
        /// <summary>Whether an operation of <paramref name="kind"/> may run beside those running: a read beside reads,
        /// with none held before it.</summary>
        public bool Admits(PendingKind kind) =>
            RunningCount == 0 || (kind == PendingKind.Read && RunningReads && FirstHeld is null);

        public Queue Running(PendingKind kind) => this with
        {
            RunningCount = RunningCount + 1,
            RunningReads = (RunningCount == 0 || RunningReads) && kind == PendingKind.Read,
        };
    }
}
