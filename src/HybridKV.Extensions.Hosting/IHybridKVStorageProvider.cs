namespace HybridKV.Extensions.Hosting;

/// <summary>
/// Where a hosted store keeps its log and checkpoints when not in local files (<see cref="HybridKVOptions.Directory"/>):
/// checked when the host starts, opened asynchronously before the store is created, and disposed after the store when
/// the host stops. Set on <see cref="HybridKVOptions.StorageProvider"/>, usually by a package's extension of
/// <see cref="HybridKVBuilder"/> (such as <c>UseAzureStorage()</c> in HybridKV.Extensions.Hosting.Azure).
/// </summary>
/// <remarks>
/// An implementation must keep secrets (connection strings, account keys, SAS tokens) out of
/// <see cref="Description"/>, of the failures <see cref="Validate"/> returns and of the exceptions
/// <see cref="OpenAsync"/> throws: the host logs all three.
/// </remarks>
public interface IHybridKVStorageProvider
{
    /// <summary>What log lines and messages call the storage, for example "Azure Storage container
    /// 'https://account.blob.core.windows.net/store1'". Never a secret.</summary>
    string Description { get; }

    /// <summary>Checks the provider's settings, and how they fit the store's options, when the host starts, without
    /// any I/O.</summary>
    /// <param name="options">The store's hosting options.</param>
    /// <returns>One message per invalid setting, naming it (and its configuration key) and what is allowed; empty when
    /// every setting is valid.</returns>
    IReadOnlyList<string> Validate(HybridKVOptions options);

    /// <summary>Opens the log device and the checkpoint store of the store that <paramref name="options"/> describe.</summary>
    /// <param name="options">The store's hosting options (its segment size, for instance).</param>
    /// <param name="loggerFactory">Where the device and the checkpoint store log.</param>
    /// <param name="cancellationToken">Cancels opening (the host's start was cancelled).</param>
    /// <returns>The opened storage, which the host owns from then on and disposes after the store.</returns>
    Task<HybridKVStorage> OpenAsync(
        HybridKVOptions options, Microsoft.Extensions.Logging.ILoggerFactory loggerFactory,
        CancellationToken cancellationToken);
}
