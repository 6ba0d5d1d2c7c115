using Azure.Storage.Blobs.Models;
using HybridKV.Azure.Tests.Support;
using HybridKV.Devices;
using HybridKV.Tests.Devices;

namespace HybridKV.Azure.Tests.Devices;

/// <summary>The local devices' conformance suite (shared source), against page blobs in a real Azurite.</summary>
[Trait("Category", "Azure")]
public sealed class AzurePageBlobDeviceConformanceTests : DeviceConformanceTests
{
    private readonly Azurite _azurite = Azurite.Instance.GetAwaiter().GetResult();
    private readonly string _containerName = Azurite.NewContainerName();

    protected override StorageDevice CreateDevice() =>
        AzurePageBlobDevice.OpenAsync(_azurite.ConnectionString, _containerName, new AzurePageBlobDeviceOptions
        {
            // A prefix per device: the property test opens many devices in one container.
            BlobPrefix = "log-" + Guid.NewGuid().ToString("N"),
            SegmentSize = Segment,
            // Small requests, so that the suite's multi-sector requests are split and run concurrently.
            MaxRequestBytes = 2 * Sector,
        }).GetAwaiter().GetResult();

    protected override int StoredSegmentCount(StorageDevice device)
    {
        var azure = (AzurePageBlobDevice)device;
        string prefix = azure.BlobPrefix + ".";
        return _azurite.Container(_containerName).GetBlobs(BlobTraits.None, BlobStates.None, prefix, CancellationToken.None)
            .Count(blob => long.TryParse(blob.Name[prefix.Length..], out _));
    }
}
