namespace HybridKV.Operations;

/// <summary>The engine-level outcome of one attempt at an operation.</summary>
internal enum OperationStatus : byte
{
    /// <summary>Done: found, written or updated.</summary>
    Success,

    /// <summary>Done: the key does not exist.</summary>
    NotFound,

    /// <summary>A compare-and-swap on the index lost a race; start over from the index at once.</summary>
    RetryNow,

    /// <summary>Cannot finish now (an RMW in the fuzzy region, FASTER §6.3); continue in CompletePending.</summary>
    Pending,

    /// <summary>
    /// The log has no free page frame yet; leave epoch protection, wait for log space, and start over.
    /// </summary>
    RetryLater,
}
