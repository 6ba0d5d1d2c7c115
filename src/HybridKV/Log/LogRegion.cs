namespace HybridKV.Log;

/// <summary>
/// Where a logical address lies in the HybridLog, as one operation sees it (FASTER §6, Fig. 7 and Table 2).
/// Ordered from the oldest part of the log to the tail.
/// </summary>
internal enum LogRegion : byte
{
    /// <summary>Below the begin address: no record (the end of a chain, or truncated away).</summary>
    None,

    /// <summary>Between begin and head: on storage only, read with I/O.</summary>
    OnStorage,

    /// <summary>Between head and safe read-only: immutable in memory, every thread agrees.</summary>
    SafeReadOnly,

    /// <summary>Between safe read-only and read-only: some threads may still update it in place.</summary>
    Fuzzy,

    /// <summary>At or above read-only: updated in place.</summary>
    Mutable,
}
