using System.Numerics;
using Azure.Storage.Blobs;

namespace HybridKV.Azure;

/// <summary>Where and how an <see cref="AzurePageBlobDevice"/> keeps the log's segments.</summary>
public sealed record AzurePageBlobDeviceOptions
{
    /// <summary>The most bytes one Put Page request may carry: the service's limit, 4 MiB.</summary>
    public const int MaxPutPageBytes = 4 << 20;

    /// <summary>The largest page blob the service allows, 8 TiB: the largest segment.</summary>
    public const long MaxSegmentSize = 8L << 40;

    /// <summary>
    /// The segment blobs are named <c>{BlobPrefix}.{segment}</c>, the label <c>{BlobPrefix}.label</c> and the lease blob
    /// <c>{BlobPrefix}.lock</c>. May contain '/' to place them under a virtual directory. Default "hlog".
    /// </summary>
    public string BlobPrefix { get; init; } = "hlog";

    /// <summary>The size of one segment, which is the size each segment's page blob is created with: a power of two
    /// from 512 bytes to <see cref="MaxSegmentSize"/>. Default 1 GiB.</summary>
    public long SegmentSize { get; init; } = 1L << 30;

    /// <summary>The highest address (exclusive) the device accepts. Default unbounded.</summary>
    public long Capacity { get; init; } = long.MaxValue;

    /// <summary>The most bytes per request: writes and reads are split into requests of at most this size, a multiple
    /// of 512 from 512 to <see cref="MaxPutPageBytes"/>. Default 4 MiB.</summary>
    public int MaxRequestBytes { get; init; } = MaxPutPageBytes;

    /// <summary>How many requests (Put Page and ranged Get Blob) may be in flight at once, from 1 to 1024. Default 64.</summary>
    public int MaxConcurrentRequests { get; init; } = 64;

    /// <summary>Whether opening creates the container when it does not exist. Default <see langword="true"/>.</summary>
    public bool CreateContainer { get; init; } = true;

    /// <summary>The lease that makes this device the log's only writer.</summary>
    public AzureLeaseOptions Lease { get; init; } = new();

    /// <summary>How transient failures are retried, and for how long at most.</summary>
    public AzureRetryOptions Retry { get; init; } = new();

    /// <summary>
    /// The Azure SDK client options to start from (transport, diagnostics, extra pipeline policies), or
    /// <see langword="null"/> for the defaults. Their retry settings are replaced by <see cref="Retry"/>'s.
    /// </summary>
    public BlobClientOptions? ClientOptions { get; init; }

    /// <summary>Checks every value, naming the first invalid one.</summary>
    /// <exception cref="ArgumentException">A value is invalid; the message names it, the value and the allowed range.</exception>
    public void Validate()
    {
        BlobNames.CheckPrefix(BlobPrefix, nameof(BlobPrefix));
        if (SegmentSize < 512 || SegmentSize > MaxSegmentSize || !BitOperations.IsPow2(SegmentSize))
        {
            throw new ArgumentOutOfRangeException(nameof(SegmentSize), SegmentSize,
                $"The segment size must be a power of two from 512 bytes to {MaxSegmentSize} bytes (8 TiB, the " +
                "largest page blob).");
        }

        if (MaxRequestBytes < 512 || MaxRequestBytes > MaxPutPageBytes || MaxRequestBytes % 512 != 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxRequestBytes), MaxRequestBytes,
                $"MaxRequestBytes must be a multiple of 512 from 512 to {MaxPutPageBytes} (4 MiB, the Put Page limit).");
        }

        if (MaxConcurrentRequests is < 1 or > 1024)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxConcurrentRequests), MaxConcurrentRequests,
                "MaxConcurrentRequests must be from 1 to 1024.");
        }

        ArgumentNullException.ThrowIfNull(Lease, nameof(Lease));
        ArgumentNullException.ThrowIfNull(Retry, nameof(Retry));
        Lease.Validate();
        Retry.Validate();
    }

    /// <summary>The SDK options to build the client with: <see cref="ClientOptions"/> (or new ones) with
    /// <see cref="Retry"/>'s retry settings.</summary>
    internal static BlobClientOptions ClientOptionsWith(BlobClientOptions? options, AzureRetryOptions retry)
    {
        BlobClientOptions result = options ?? new BlobClientOptions();
        retry.ApplyTo(result);
        return result;
    }
}
