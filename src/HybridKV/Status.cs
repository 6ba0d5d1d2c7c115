namespace HybridKV;

/// <summary>The outcome of one operation.</summary>
public enum Status : byte
{
    /// <summary>The operation completed: a read found the key, or an update or delete was applied.</summary>
    Ok = 0,

    /// <summary>The key does not exist (a read, or a delete of a key memory or the index shows absent; a delete of a
    /// key whose newest record is on the device reports <see cref="Ok"/> without reading it).</summary>
    NotFound = 1,

    /// <summary>
    /// The operation could not complete now and was queued on the session; it completes in
    /// <c>CompletePending</c>, which reports its final status to the completion callback.
    /// </summary>
    Pending = 2,

    /// <summary>
    /// A pending operation failed because the device could not read the record it needed; the store is unchanged by
    /// it. Reported to completion callbacks (the asynchronous methods throw the underlying exception instead).
    /// </summary>
    Error = 3,
}
