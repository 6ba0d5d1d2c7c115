using System.Globalization;
using Azure;
using Azure.Core;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using HybridKV.Checkpoints;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace HybridKV.Azure;

/// <summary>
/// Checkpoints in an Azure blob container: <c>{prefix}/{token}/{part}</c> block blobs for the parts (durable once the
/// stream is disposed: the block list is committed then), and <c>{prefix}/{token}/manifest.json</c>, one Put Blob that
/// appears whole or not at all, written only after every part: the checkpoint is committed when it exists. The
/// <see cref="CheckpointCatalog"/> on top checks each part's length and CRC-32C against the manifest and recovers from
/// the newest checkpoint that verifies, as with <see cref="LocalCheckpointStore"/>.
/// </summary>
/// <remarks>
/// One writer: opening acquires a lease on <c>{prefix}.lock</c>, renewed in the background. A new checkpoint's blobs
/// cannot carry a lease before they exist, so the manifest, the write that makes a checkpoint count, is fenced by
/// renewing the lease just before it (a writer whose lease another writer took fails there) and is bounded to half the
/// lease's duration.
/// </remarks>
public sealed class AzureCheckpointStore : CheckpointStore, IAsyncDisposable
{
    private const string ManifestName = "manifest.json";

    private readonly BlobContainerClient _container;
    private readonly AzureCheckpointStoreOptions _options;
    private readonly BlobLease _lease;
    private readonly ILogger _logger;
    private readonly string _containerDisplay;

    private AzureCheckpointStore(
        BlobContainerClient container, AzureCheckpointStoreOptions options, BlobLease lease, ILogger logger)
    {
        _container = container;
        _options = options;
        _lease = lease;
        _logger = logger;
        _containerDisplay = BlobNames.Display(container.Uri);
    }

    /// <summary>The container's URI, without any query string.</summary>
    public string Container => _containerDisplay;

    /// <summary>The prefix of the checkpoints' blob names.</summary>
    public string BlobPrefix => _options.BlobPrefix;

    /// <summary>Whether this store lost its lease and so stopped writing.</summary>
    public bool LeaseLost => _lease.IsLost;

    /// <summary>Opens a checkpoint store in the container that a connection string and a container name designate.</summary>
    /// <inheritdoc cref="OpenAsync(AzureBlobLocation, AzureCheckpointStoreOptions?, ILoggerFactory?, CancellationToken)"/>
    public static Task<AzureCheckpointStore> OpenAsync(
        string connectionString, string containerName, AzureCheckpointStoreOptions? options = null,
        ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default) =>
        OpenAsync(AzureBlobLocation.FromConnectionString(connectionString, containerName), options, loggerFactory,
            cancellationToken);

    /// <summary>Opens a checkpoint store in the container at <paramref name="containerUri"/>, authenticated with
    /// <paramref name="credential"/>.</summary>
    /// <inheritdoc cref="OpenAsync(AzureBlobLocation, AzureCheckpointStoreOptions?, ILoggerFactory?, CancellationToken)"/>
    public static Task<AzureCheckpointStore> OpenAsync(
        Uri containerUri, TokenCredential credential, AzureCheckpointStoreOptions? options = null,
        ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default) =>
        OpenAsync(AzureBlobLocation.FromUri(containerUri, credential), options, loggerFactory, cancellationToken);

    /// <summary>
    /// Opens (or creates) a checkpoint store: creates the container if allowed and acquires the writer's lease
    /// (waiting up to <see cref="AzureLeaseOptions.AcquireTimeout"/> for one a dead writer left).
    /// </summary>
    /// <param name="location">The container.</param>
    /// <param name="options">The store's options, or <see langword="null"/> for the defaults.</param>
    /// <param name="loggerFactory">Where the store logs (lease events), or <see langword="null"/>.</param>
    /// <param name="cancellationToken">Cancels opening.</param>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="BlobStoreInUseException">Another writer holds the store's lease.</exception>
    /// <exception cref="IOException">Azure Storage failed.</exception>
    public static async Task<AzureCheckpointStore> OpenAsync(
        AzureBlobLocation location, AzureCheckpointStoreOptions? options = null, ILoggerFactory? loggerFactory = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(location);
        options ??= new AzureCheckpointStoreOptions();
        options.Validate();
        ILogger logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger<AzureCheckpointStore>();
        (BlobContainerClient container, BlobLease lease) = await BlobLease.OpenContainerAsync(location,
            options.ClientOptions, options.Retry, options.CreateContainer, options.BlobPrefix + ".lock", options.Lease,
            logger, IoError, cancellationToken).ConfigureAwait(false);
        var store = new AzureCheckpointStore(container, options, lease, logger);
        AzureLog.CheckpointStoreOpened(logger, store.Container, options.BlobPrefix);
        return store;
    }

    /// <summary>Names the store by its container and prefix, for messages.</summary>
    public override string ToString() => $"'{_containerDisplay}/{_options.BlobPrefix}'";

    /// <inheritdoc/>
    public override async Task<Stream> CreatePartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        CheckPartName(part);
        _lease.ThrowIfLost();
        BlockBlobClient blob = _container.GetBlockBlobClient(BlobName(token, part));
        Stream upload = await RunAsync(token => blob.OpenWriteAsync(overwrite: true, new BlockBlobOpenWriteOptions
        {
            BufferSize = _options.BlockSize,
        }, token), $"Creating '{Describe(token, part)}'", cancellationToken).ConfigureAwait(false);
        return new AzureCalledStream(upload, Describe(token, part), _options.Retry.MaxTotalTime, IoError);
    }

    /// <inheritdoc/>
    public override async Task<Stream> OpenPartAsync(Guid token, string part, CancellationToken cancellationToken)
    {
        CheckPartName(part);
        BlobClient blob = _container.GetBlobClient(BlobName(token, part));
        string where = Describe(token, part);
        Stream download = await RunAsync(async token =>
        {
            try
            {
                return await blob.OpenReadAsync(new BlobOpenReadOptions(allowModifications: false)
                {
                    BufferSize = _options.BlockSize,
                }, token).ConfigureAwait(false);
            }
            catch (RequestFailedException error) when (error.Status == 404)
            {
                throw new FileNotFoundException($"The checkpoint part '{where}' does not exist.", where, error);
            }
        }, $"Opening '{where}'", cancellationToken).ConfigureAwait(false);
        return new AzureCalledStream(download, where, _options.Retry.MaxTotalTime, IoError);
    }

    /// <inheritdoc/>
    public override async Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken)
    {
        // Proves the lease is still this writer's and makes it last a whole duration from here; the upload must end
        // well within it.
        await _lease.RenewNowAsync(_options.Retry, cancellationToken).ConfigureAwait(false);
        TimeSpan bound = _options.Lease.Duration / 2 < _options.Retry.MaxTotalTime
            ? _options.Lease.Duration / 2
            : _options.Retry.MaxTotalTime;
        BlobClient blob = _container.GetBlobClient(BlobName(token, ManifestName));
        await AzureCalls.RunAsync(call => blob.UploadAsync(BinaryData.FromBytes(manifest), overwrite: true, call),
            $"Committing '{Describe(token, ManifestName)}'", bound, IoError, cancellationToken).ConfigureAwait(false);
        AzureLog.CheckpointCommitted(_logger, _containerDisplay, token);
    }

    /// <inheritdoc/>
    public override async Task<IReadOnlyList<Guid>> ListCommittedAsync(CancellationToken cancellationToken) =>
        (await ListAsync(cancellationToken).ConfigureAwait(false)).Where(t => t.Committed).Select(t => t.Token).ToList();

    /// <inheritdoc/>
    public override async Task<IReadOnlyList<Guid>> ListAllAsync(CancellationToken cancellationToken) =>
        (await ListAsync(cancellationToken).ConfigureAwait(false)).Select(t => t.Token).ToList();

    /// <inheritdoc/>
    public override async Task<byte[]> ReadManifestAsync(Guid token, CancellationToken cancellationToken)
    {
        BlobClient blob = _container.GetBlobClient(BlobName(token, ManifestName));
        string where = Describe(token, ManifestName);
        return await RunAsync(async call =>
        {
            try
            {
                Response<BlobDownloadResult> result = await blob.DownloadContentAsync(call).ConfigureAwait(false);
                return result.Value.Content.ToArray();
            }
            catch (RequestFailedException error) when (error.Status == 404)
            {
                throw new FileNotFoundException($"The checkpoint has no manifest '{where}'.", where, error);
            }
        }, $"Reading '{where}'", cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    public override async Task DeleteAsync(Guid token, CancellationToken cancellationToken)
    {
        _lease.ThrowIfLost();
        string directory = CheckpointPrefix(token);
        await RunAsync(call => _container.DeleteBlobIfExistsAsync(directory + ManifestName,
                DeleteSnapshotsOption.IncludeSnapshots, cancellationToken: call),
            $"Deleting '{Describe(token, ManifestName)}'", cancellationToken).ConfigureAwait(false);
        List<string> parts = await RunAsync(async call =>
        {
            var names = new List<string>();
            await foreach (BlobItem item in _container.GetBlobsAsync(BlobTraits.None, BlobStates.None, directory, call)
                               .ConfigureAwait(false))
            {
                names.Add(item.Name);
            }

            return names;
        }, $"Listing '{Describe(token, null)}'", cancellationToken).ConfigureAwait(false);
        foreach (string name in parts)
        {
            await RunAsync(call => _container.DeleteBlobIfExistsAsync(name, DeleteSnapshotsOption.IncludeSnapshots,
                cancellationToken: call), $"Deleting '{_containerDisplay}/{name}'", cancellationToken).ConfigureAwait(false);
        }
    }

    /// <inheritdoc/>
    public override string Describe(Guid token, string? part) =>
        $"{_containerDisplay}/{CheckpointPrefix(token)}{part}";

    /// <summary>Releases the lease (the next writer gets it at once) and the store.</summary>
    public async ValueTask DisposeAsync()
    {
        await _lease.DisposeAsync().ConfigureAwait(false);
        Dispose();
    }

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            // Idempotent: after DisposeAsync this returns at once.
            _lease.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }

        base.Dispose(disposing);
    }

    private static IOException IoError(string message, Exception inner) =>
        inner as FileNotFoundException ?? new IOException(message, inner);

    private Task<T> RunAsync<T>(Func<CancellationToken, Task<T>> call, string what, CancellationToken cancellationToken) =>
        AzureCalls.RunAsync(call, what, _options.Retry.MaxTotalTime, IoError, cancellationToken);

    private Task RunAsync(Func<CancellationToken, Task> call, string what, CancellationToken cancellationToken) =>
        AzureCalls.RunAsync(call, what, _options.Retry.MaxTotalTime, IoError, cancellationToken);

    private string CheckpointPrefix(Guid token) =>
        $"{_options.BlobPrefix}/{token.ToString("N", CultureInfo.InvariantCulture)}/";

    private string BlobName(Guid token, string part) => CheckpointPrefix(token) + part;

    private async Task<List<(Guid Token, bool Committed)>> ListAsync(CancellationToken cancellationToken)
    {
        string prefix = _options.BlobPrefix + "/";
        return await RunAsync(async call =>
        {
            var tokens = new Dictionary<Guid, bool>();
            await foreach (BlobItem item in _container.GetBlobsAsync(BlobTraits.None, BlobStates.None, prefix, call)
                               .ConfigureAwait(false))
            {
                string rest = item.Name[prefix.Length..];
                int slash = rest.IndexOf('/', StringComparison.Ordinal);
                if (slash <= 0 || !Guid.TryParseExact(rest[..slash], "N", out Guid token))
                {
                    continue;
                }

                bool isManifest = rest[(slash + 1)..] == ManifestName;
                tokens[token] = (tokens.TryGetValue(token, out bool committed) && committed) || isManifest;
            }

            return tokens.Select(pair => (pair.Key, pair.Value)).ToList();
        }, $"Listing '{_containerDisplay}/{prefix}*'", cancellationToken).ConfigureAwait(false);
    }

    private static void CheckPartName(string part)
    {
        if (string.IsNullOrWhiteSpace(part) || part.Length > 100 || part.Contains('/', StringComparison.Ordinal) ||
            part.Contains('\\', StringComparison.Ordinal) || part.Any(char.IsControl) ||
            part.StartsWith(ManifestName, StringComparison.Ordinal))
        {
            throw new ArgumentException(
                $"'{part}' is not a valid checkpoint part name: 1 to 100 characters, no '/', '\\' or control " +
                $"characters, not starting with '{ManifestName}'.", nameof(part));
        }
    }
}
