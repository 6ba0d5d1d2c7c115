namespace HybridKV.Log;

/// <summary>The outcome of reserving space at the tail of the log.</summary>
internal enum AllocationResult : byte
{
    /// <summary>The space is reserved.</summary>
    Success,

    /// <summary>
    /// The next page's frame is still in use (its old page is not flushed, or not yet evicted); the caller leaves epoch
    /// protection, waits for <see cref="HybridLog.SpaceSignal"/> and tries again.
    /// </summary>
    RetryLater,

    /// <summary>The log has no device to evict pages to, and every frame holds live data.</summary>
    Full,

    /// <summary>The next page would lie beyond the log's address space (<see cref="HybridLog.AddressLimit"/>).</summary>
    AddressSpaceExhausted,
}
