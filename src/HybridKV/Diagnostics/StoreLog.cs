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

    [LoggerMessage(EventId = 4, Level = LogLevel.Warning,
        Message = "Deleted the existing store on {Device} ({Checkpoints} checkpoints) as StoreSettings.ExistingData " +
                  "= Delete asks; the store starts empty with log {LogId}")]
    public static partial void ExistingDataDeleted(ILogger logger, HybridKV.Devices.StorageDevice device, int checkpoints, Guid logId);

    [LoggerMessage(EventId = 5, Level = LogLevel.Information,
        Message = "Started log {LogId} on {Device}")]
    public static partial void LogStarted(ILogger logger, Guid logId, HybridKV.Devices.StorageDevice device);

    [LoggerMessage(EventId = 6, Level = LogLevel.Information,
        Message = "Found log {LogId} on {Device}: the store must be recovered before it is used")]
    public static partial void ExistingLogFound(ILogger logger, Guid logId, HybridKV.Devices.StorageDevice device);

    [LoggerMessage(EventId = 7, Level = LogLevel.Warning,
        Message = "Erased the log {LogId} on {Device}: no checkpoint of it was committed, so none of its operations " +
                  "was durable")]
    public static partial void UncommittedLogErased(ILogger logger, Guid logId, HybridKV.Devices.StorageDevice device);

    [LoggerMessage(EventId = 8, Level = LogLevel.Error,
        Message = "Session {SessionId} was disposed with pending operations, and finishing one of them failed; it " +
                  "finished with Status.Error")]
    public static partial void PendingFailedAtDispose(ILogger logger, Guid sessionId, Exception error);

    [LoggerMessage(EventId = 9, Level = LogLevel.Error,
        Message = "The log is damaged at address {Address} ({Location}): {Problem}; the operation that read it failed")]
    public static partial void CorruptRecord(ILogger logger, long address, string location, string problem);

    [LoggerMessage(EventId = 10, Level = LogLevel.Error,
        Message = "Keeping live records in memory failed and has stopped; pages leave memory with their records as in " +
                  "a store without it (correct, slower to read)")]
    public static partial void MemoryCompactionFailed(ILogger logger, Exception error);

    [LoggerMessage(EventId = 11, Level = LogLevel.Information,
        Message = "Compacted the log [{From}, {Until}): {Copied} live records ({CopiedBytes} bytes) copied forward of " +
                  "{Examined}, {Tombstones} tombstones and {Reclaimed} index entries dropped, in {Milliseconds} ms")]
    public static partial void Compacted(ILogger logger, long from, long until, long copied, long copiedBytes,
        long examined, long tombstones, long reclaimed, double milliseconds);

    [LoggerMessage(EventId = 12, Level = LogLevel.Error,
        Message = "Automatic log compaction failed; it tries again in {RetrySeconds} s at the earliest. The log is " +
                  "intact: a compaction that stops part way leaves copies that change no value")]
    public static partial void CompactionFailed(ILogger logger, Exception error, double retrySeconds);
}
