using Azure.Storage.Blobs;

namespace HybridKV.Azure;

/// <summary>Where and how an <see cref="AzureCheckpointStore"/> keeps checkpoints.</summary>
public sealed record AzureCheckpointStoreOptions
{
    /// <summary>
    /// The checkpoints' blobs are named <c>{BlobPrefix}/{token}/{part}</c> and <c>{BlobPrefix}/{token}/manifest.json</c>,
    /// and the lease blob <c>{BlobPrefix}.lock</c>. Default "checkpoints".
    /// </summary>
    public string BlobPrefix { get; init; } = "checkpoints";

    /// <summary>The size of the blocks a part is uploaded in, from 64 KiB to 100 MiB. Default 4 MiB.</summary>
    public int BlockSize { get; init; } = 4 << 20;

    /// <summary>Whether opening creates the container when it does not exist. Default <see langword="true"/>.</summary>
    public bool CreateContainer { get; init; } = true;

    /// <summary>The lease that makes this store the checkpoints' only writer.</summary>
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
        if (BlockSize < 64 << 10 || BlockSize > 100 << 20)
        {
            throw new ArgumentOutOfRangeException(nameof(BlockSize), BlockSize,
                "BlockSize must be from 64 KiB to 100 MiB.");
        }

        ArgumentNullException.ThrowIfNull(Lease, nameof(Lease));
        ArgumentNullException.ThrowIfNull(Retry, nameof(Retry));
        Lease.Validate();
        Retry.Validate();
    }
}
