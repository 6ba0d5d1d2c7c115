using System.Diagnostics;
using System.Runtime.InteropServices;
using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// A session's pending operations in issue order, one queue per key: an operation issued while an earlier operation
/// of the same session on the same key is pending waits behind it, so that a session's operations on one key take
/// effect in the order of their serial numbers. Only the first operation of a key's queue may run (read the device,
/// retry, wait for log space); the others are held until it finishes. Keys are told apart by their 64-bit hash: two
/// keys with the same hash are ordered together, which costs a wait and never a wrong result.
/// </summary>
/// <remarks>Used only by the session's exclusive stretches (its caller, or its background driver), never concurrently.</remarks>
internal sealed class PendingKeyOrder<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly Dictionary<long, Queue> _queues = new();

    /// <summary>How many keys have a pending operation; 0 keeps the check off the operation path.</summary>
    public int KeyCount => _queues.Count;

    /// <summary>Whether an operation on a key with this hash must wait behind a pending one.</summary>
    public bool HasPending(long keyHash) => _queues.ContainsKey(keyHash);

    /// <summary>Adds a newly parked operation at the end of its key's queue.</summary>
    /// <returns><see langword="true"/> if it is the first of its key and may run now; otherwise it is held.</returns>
    public bool Append(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrAddDefault(_queues, operation.KeyHash, out bool exists);
        if (!exists)
        {
            queue = new Queue(operation, operation);
            return true;
        }

        queue.Last.NextOnKey = operation;
        queue = queue with { Last = operation };
        return false;
    }

    /// <summary>Removes a finished operation, the first of its key's queue.</summary>
    /// <returns>The operation of the same key that may run now, or <see langword="null"/>.</returns>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? Remove(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        ref Queue queue = ref CollectionsMarshal.GetValueRefOrNullRef(_queues, operation.KeyHash);
        Debug.Assert(queue.First == operation, "only the first operation of a key runs, so only it finishes");
        PendingOperation<TKey, TValue, TInput, TOutput, TContext>? next = operation.NextOnKey;
        operation.NextOnKey = null;
        if (next is null)
        {
            _queues.Remove(operation.KeyHash);
            return null;
        }

        queue = queue with { First = next };
        return next;
    }

    private readonly record struct Queue(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> First,
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> Last);
}
