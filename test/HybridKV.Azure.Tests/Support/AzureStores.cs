using Azure.Core;
using Azure.Storage.Blobs;
using HybridKV.Checkpoints;
using Microsoft.Extensions.Logging;

namespace HybridKV.Azure.Tests.Support;

/// <summary>A log device and a checkpoint store in one container of the test run's Azurite, and a count store over
/// them.</summary>
public static class AzureStores
{
    /// <summary>Options with a fault policy (or none), fast retries and a short network timeout, and a lease that a
    /// second writer waits for no time at all.</summary>
    public static AzurePageBlobDeviceOptions DeviceOptions(FaultPolicy? faults = null, long segmentSize = 1L << 20) => new()
    {
        SegmentSize = segmentSize,
        Lease = new AzureLeaseOptions { AcquireTimeout = TimeSpan.Zero },
        Retry = FastRetries,
        ClientOptions = ClientOptions(faults),
    };

    public static AzureCheckpointStoreOptions CheckpointOptions(FaultPolicy? faults = null) => new()
    {
        BlockSize = 64 << 10,
        Lease = new AzureLeaseOptions { AcquireTimeout = TimeSpan.Zero },
        Retry = FastRetries,
        ClientOptions = ClientOptions(faults),
    };

    /// <summary>Retries every 20-200 ms, a try timing out after 2 s: injected faults cost little time.</summary>
    public static AzureRetryOptions FastRetries { get; } = new()
    {
        MaxRetries = 20,
        Delay = TimeSpan.FromMilliseconds(20),
        MaxDelay = TimeSpan.FromMilliseconds(200),
        NetworkTimeout = TimeSpan.FromSeconds(2),
        MaxTotalTime = TimeSpan.FromMinutes(1),
    };

    public static BlobClientOptions ClientOptions(FaultPolicy? faults)
    {
        var options = new BlobClientOptions();
        if (faults is not null)
        {
            options.AddPolicy(faults, HttpPipelinePosition.BeforeTransport);
        }

        return options;
    }

    /// <summary>Small pages and memory, so that a few thousand keys are larger than memory.</summary>
    public static StoreSettings Settings(
        AzurePageBlobDevice device, CheckpointStore? checkpoints, ILoggerFactory? loggerFactory = null) => new()
    {
        LogDevice = device,
        CheckpointStore = checkpoints,
        PageSizeBits = 12,
        MemorySizeBytes = 1L << 15,
        IndexBuckets = 1L << 10,
        LoggerFactory = loggerFactory,
    };
}
