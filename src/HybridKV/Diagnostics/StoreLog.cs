using Microsoft.Extensions.Logging;

namespace HybridKV.Diagnostics;

/// <summary>The store's log messages, with stable event ids.</summary>
internal static partial class StoreLog
{
    [LoggerMessage(EventId = 1, Level = LogLevel.Information,
        Message = "Store created: {IndexBuckets} index buckets, {BufferPages} pages of {PageSize} bytes in memory " +
                  "({MutablePages} mutable), records of {RecordSize} bytes")]
    public static partial void StoreCreated(
        ILogger logger, long indexBuckets, int bufferPages, int pageSize, int mutablePages, int recordSize);

    [LoggerMessage(EventId = 2, Level = LogLevel.Information,
        Message = "Store disposed at tail address {TailAddress}")]
    public static partial void StoreDisposed(ILogger logger, long tailAddress);

    [LoggerMessage(EventId = 3, Level = LogLevel.Error,
        Message = "Writing log range [{From}, {To}) to the device failed; operations that need a new page frame will " +
                  "fail until the store is reopened. Data already written is intact")]
    public static partial void FlushFailed(ILogger logger, long from, long to, Exception error);
}
