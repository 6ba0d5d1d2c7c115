namespace HybridKV.Sessions;

/// <summary>
/// Operations on many keys with their cache misses overlapped (issue 19): an operation on a key in memory waits for
/// two dependent misses, its bucket and then its record, and operations one after another wait for them one after
/// another. A prefetch first starts loading every key's bucket, then every record those buckets lead to, without
/// waiting for any; the operations that follow find both loaded.
/// </summary>
public sealed partial class Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>
    /// Starts loading into the processor's caches what operations on <paramref name="keys"/> read first: each key's
    /// index bucket, then the record in memory its entry leads to. Call it just before reading, upserting, updating or
    /// deleting those keys (any mix, in any order): their cache misses then overlap instead of following one another.
    /// A hint only: it changes nothing, and a key with no entry, or whose record is on the device, costs a look-up and
    /// loads nothing more.
    /// </summary>
    /// <param name="keys">The keys of the operations about to run. About 32 at a time cover memory latency (measured
    /// with 2M keys: 32 and 64 alike, 1.5x the gain of 16); many more may evict the first before they are used.</param>
    /// <exception cref="ObjectDisposedException">The session or its store was disposed.</exception>
    public void Prefetch(ReadOnlySpan<TKey> keys)
    {
        // Under protection, as an operation: the index's buckets and the log's frames are not freed or moved meanwhile.
        Enter();
        try
        {
            foreach (ref readonly TKey key in keys)
            {
                _engine.PrefetchBucket(in key);
            }

            // By now the first buckets are loading or loaded: the entries they hold lead to the records.
            foreach (ref readonly TKey key in keys)
            {
                _engine.PrefetchRecord(in key);
            }
        }
        finally
        {
            Exit();
        }
    }
}
