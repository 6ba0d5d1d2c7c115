using HybridKV.Operations;

namespace HybridKV.Sessions;

/// <summary>
/// Reads of many keys at once (issue 19): each group of keys is prefetched (<see cref="Prefetch"/>), then read one
/// by one under the same protection, each from the chain its prefetch found, so the cache misses of a group overlap
/// and no key is hashed or looked up twice.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>
    /// Reads <paramref name="keys"/> with the default input, each as <see cref="Read(in TKey, ref TOutput)"/> would,
    /// in order, overlapping their memory accesses: faster than one read at a time when keys miss the CPU caches.
    /// Each key is one operation with its own serial number, as if read alone.
    /// </summary>
    /// <param name="keys">The keys.</param>
    /// <param name="outputs">Where each key's output goes, at the key's index.</param>
    /// <param name="statuses">Each key's status: <see cref="Status.Ok"/>, <see cref="Status.NotFound"/>, or
    /// <see cref="Status.Pending"/> (the read finishes in <see cref="CompletePending"/>, which hands its output to the
    /// completion callback, as for a single read).</param>
    /// <exception cref="ArgumentException"><paramref name="outputs"/> or <paramref name="statuses"/> is shorter than
    /// <paramref name="keys"/>.</exception>
    public void Read(ReadOnlySpan<TKey> keys, Span<TOutput> outputs, Span<Status> statuses)
    {
        if (outputs.Length < keys.Length || statuses.Length < keys.Length)
        {
            throw new ArgumentException(
                $"A batch of {keys.Length} keys needs as many outputs ({outputs.Length} given) and statuses " +
                $"({statuses.Length} given).", outputs.Length < keys.Length ? nameof(outputs) : nameof(statuses));
        }

        Span<long> chains = stackalloc long[PrefetchGroup];
        for (int start = 0; start < keys.Length; start += PrefetchGroup)
        {
            ReadOnlySpan<TKey> group = keys.Slice(start, Math.Min(PrefetchGroup, keys.Length - start));
            int read = ReadGroup(group, outputs.Slice(start), statuses.Slice(start), chains);
            // What the group left, because strict CPR must first finish the session's pending operations (which
            // waits outside protection), is read one key at a time.
            for (int i = read; i < group.Length; i++)
            {
                statuses[start + i] = Read(in group[i], default!, ref outputs[start + i], default!);
            }
        }
    }

    /// <summary>Prefetches and reads a group under one protection; returns how many keys it read.</summary>
    private int ReadGroup(ReadOnlySpan<TKey> keys, Span<TOutput> outputs, Span<Status> statuses, Span<long> chains)
    {
        Enter();
        try
        {
            PrefetchProtected(keys, chains);
            for (int i = 0; i < keys.Length; i++)
            {
                if (_strictCpr && MustFinishPendingFirst())
                {
                    return i;
                }

                long serialNo = _cpr.BeginOperation();
                OperationStatus status;
                try
                {
                    status = AttemptProtected<ReadKind>(in keys[i], default!, default!, ref outputs[i], default!,
                        ExpiryTime.Keep, Waiter.CompletePending, serialNo, chains[i], out _);
                }
                catch
                {
                    // As in Attempt: the read is over, and nothing may stay in progress.
                    _cpr.EndOperation();
                    throw;
                }

                statuses[i] = ToStatus(status);
            }

            return keys.Length;
        }
        finally
        {
            Exit();
        }
    }
}
