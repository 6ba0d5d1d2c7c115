using Microsoft.Extensions.Logging;

namespace HybridKV.Azure;

/// <summary>Log messages of the Azure package, with stable event ids (1000–1099). They name containers by URI without
/// a query string and blobs by name; never a credential.</summary>
internal static partial class AzureLog
{
    [LoggerMessage(EventId = 1000, Level = LogLevel.Information,
        Message = "Acquired the lease on {Blob} in {Container}")]
    public static partial void LeaseAcquired(ILogger logger, string container, string blob);

    [LoggerMessage(EventId = 1001, Level = LogLevel.Information,
        Message = "The lease on {Blob} in {Container} is held by another writer ({Holder}); waiting for it to expire")]
    public static partial void LeaseWaiting(ILogger logger, string container, string blob, string holder);

    [LoggerMessage(EventId = 1002, Level = LogLevel.Warning,
        Message = "Renewing the lease on {Blob} in {Container} failed ({Problem}); retrying while the lease lasts")]
    public static partial void LeaseRenewalFailed(ILogger logger, string container, string blob, string problem);

    [LoggerMessage(EventId = 1003, Level = LogLevel.Error,
        Message = "Lost the lease on {Blob} in {Container} ({Reason}): this writer stopped writing")]
    public static partial void LeaseLost(ILogger logger, string container, string blob, string reason);

    [LoggerMessage(EventId = 1004, Level = LogLevel.Information,
        Message = "Released the lease on {Blob} in {Container}")]
    public static partial void LeaseReleased(ILogger logger, string container, string blob);

    [LoggerMessage(EventId = 1005, Level = LogLevel.Warning,
        Message = "Releasing the lease on {Blob} in {Container} failed ({Problem}); it expires by itself")]
    public static partial void LeaseReleaseFailed(ILogger logger, string container, string blob, string problem);

    [LoggerMessage(EventId = 1010, Level = LogLevel.Information,
        Message = "Opened the page-blob device {Prefix} in {Container}: {Segments} segments, begin address {BeginAddress}")]
    public static partial void DeviceOpened(ILogger logger, string container, string prefix, int segments, long beginAddress);

    [LoggerMessage(EventId = 1011, Level = LogLevel.Information,
        Message = "Took over {Count} blobs of {Prefix} in {Container} from a previous writer")]
    public static partial void TookOver(ILogger logger, string container, string prefix, int count);

    [LoggerMessage(EventId = 1012, Level = LogLevel.Debug, Message = "Created segment blob {Blob} in {Container}")]
    public static partial void SegmentCreated(ILogger logger, string container, string blob);

    [LoggerMessage(EventId = 1013, Level = LogLevel.Debug, Message = "Deleted segment blob {Blob} in {Container}")]
    public static partial void SegmentDeleted(ILogger logger, string container, string blob);

    [LoggerMessage(EventId = 1020, Level = LogLevel.Information,
        Message = "Opened the checkpoint store {Prefix} in {Container}")]
    public static partial void CheckpointStoreOpened(ILogger logger, string container, string prefix);

    [LoggerMessage(EventId = 1021, Level = LogLevel.Debug, Message = "Committed checkpoint {Token} in {Container}")]
    public static partial void CheckpointCommitted(ILogger logger, string container, Guid token);
}
