using Azure.Core;

namespace HybridKV.Extensions.Hosting.Azure;

/// <summary>
/// Where a hosted store's log and checkpoints go in Azure Storage: bound from the section <c>Azure</c> under the
/// store's section (<c>HybridKV:Azure</c> by default) by <c>UseAzureStorage()</c>. The store uses Azure once
/// <see cref="ConnectionString"/>, <see cref="Container"/> or <see cref="ContainerUri"/> is set; with none of them it
/// keeps its local <see cref="HybridKVOptions.Directory"/>.
/// </summary>
/// <remarks>
/// Either a connection string and a container name, or the container's URI and a <see cref="TokenCredential"/>
/// (<see cref="Credential"/>, or the one registered in the host's services). The log is an
/// <see cref="HybridKV.Azure.AzurePageBlobDevice"/> with segments of <see cref="HybridKVOptions.LogSegmentSizeBits"/>
/// and the checkpoints an <see cref="HybridKV.Azure.AzureCheckpointStore"/>, in the same container. A class with
/// settable properties, as the options pattern binds it.
/// </remarks>
public sealed class HybridKVAzureOptions
{
    /// <summary>The name of the section under the store's section that <c>UseAzureStorage()</c> binds.</summary>
    public const string SectionName = "Azure";

    /// <summary>
    /// The storage account's connection string (account key, SAS, or <c>UseDevelopmentStorage=true</c>), with
    /// <see cref="Container"/>. Exclusive with <see cref="ContainerUri"/>. A secret: keep it in a secret store or an
    /// environment variable (<c>HybridKV__Azure__ConnectionString</c>), not in appsettings.json; nothing logs it.
    /// </summary>
    public string? ConnectionString { get; set; }

    /// <summary>The container's name, with <see cref="ConnectionString"/>: 3 to 63 lower-case letters, digits and
    /// single hyphens. Created when missing unless <see cref="CreateContainer"/> is false.</summary>
    public string? Container { get; set; }

    /// <summary>
    /// The container's URI, for example <c>https://account.blob.core.windows.net/store1</c>, reached with
    /// <see cref="Credential"/> or the <see cref="TokenCredential"/> registered in the host's services (Microsoft
    /// Entra ID: a managed identity, <c>DefaultAzureCredential</c>). Without a query string: a SAS goes in
    /// <see cref="ConnectionString"/>. Exclusive with <see cref="ConnectionString"/>. A string rather than a
    /// <see cref="Uri"/> so that a malformed value is reported by the validator, which never quotes it.
    /// </summary>
    public string? ContainerUri { get; set; }

    /// <summary>The credential for <see cref="ContainerUri"/>; <see langword="null"/> (the default) takes the
    /// <see cref="TokenCredential"/> registered in the host's services. Not bound from configuration.</summary>
    public TokenCredential? Credential { get; set; }

    /// <summary>The prefix of the log's blobs (<c>{prefix}.{segment}</c>, <c>{prefix}.label</c>,
    /// <c>{prefix}.lock</c>). Default "hlog".</summary>
    public string LogBlobPrefix { get; set; } = "hlog";

    /// <summary>The prefix of the checkpoints' blobs (<c>{prefix}/{token}/...</c>, <c>{prefix}.lock</c>); different
    /// from <see cref="LogBlobPrefix"/>. Default "checkpoints".</summary>
    public string CheckpointBlobPrefix { get; set; } = "checkpoints";

    /// <summary>Whether opening creates the container when it does not exist. Default <see langword="true"/>.</summary>
    public bool CreateContainer { get; set; } = true;

    /// <summary>
    /// How long starting waits for the blob leases of a previous writer (a process that died) to expire before it
    /// fails with <see cref="HybridKV.Azure.BlobStoreInUseException"/>; zero fails at once. Default 45 s, longer than
    /// the leases' 30 s, so that a restarted service recovers without an operator.
    /// </summary>
    public TimeSpan LeaseAcquireTimeout { get; set; } = TimeSpan.FromSeconds(45);

    /// <summary>The last word on the log device's options (retries, lease duration, requests in flight, SDK client
    /// options): receives those built from this class and returns the ones to use. Not bound from configuration.</summary>
    public Func<HybridKV.Azure.AzurePageBlobDeviceOptions, HybridKV.Azure.AzurePageBlobDeviceOptions>? ConfigureDevice { get; set; }

    /// <summary>The last word on the checkpoint store's options, as <see cref="ConfigureDevice"/> for the device. Not
    /// bound from configuration.</summary>
    public Func<HybridKV.Azure.AzureCheckpointStoreOptions, HybridKV.Azure.AzureCheckpointStoreOptions>? ConfigureCheckpointStore { get; set; }

    /// <summary>Whether these options name a place in Azure Storage, so that the store uses it.</summary>
    internal bool IsConfigured =>
        !string.IsNullOrWhiteSpace(ConnectionString) || !string.IsNullOrWhiteSpace(Container) ||
        !string.IsNullOrWhiteSpace(ContainerUri);
}
