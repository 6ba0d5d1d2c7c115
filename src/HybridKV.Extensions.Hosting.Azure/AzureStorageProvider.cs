using Azure.Core;
using Azure.Storage.Blobs;
using HybridKV.Azure;
using Microsoft.Extensions.Logging;

namespace HybridKV.Extensions.Hosting.Azure;

/// <summary>
/// Opens a hosted store's log (<see cref="AzurePageBlobDevice"/>) and checkpoints (<see cref="AzureCheckpointStore"/>)
/// in the container that <see cref="HybridKVAzureOptions"/> name. Its description and failures name the container by
/// URI without a query string, and never quote a connection string or a URI that failed to parse (either may carry a
/// key or a SAS).
/// </summary>
internal sealed class AzureStorageProvider : IHybridKVStorageProvider
{
    private const string OptionsTypeName = nameof(HybridKVAzureOptions);

    private readonly HybridKVAzureOptions _options;
    private readonly TokenCredential? _credential;
    private readonly string? _sectionPath;

    /// <param name="options">The bound and configured options.</param>
    /// <param name="credential">The credential for a container URI: the options' own, or the host's.</param>
    /// <param name="sectionPath">The configuration section the options were bound from, for messages; or null.</param>
    public AzureStorageProvider(HybridKVAzureOptions options, TokenCredential? credential, string? sectionPath)
    {
        _options = options;
        _credential = credential;
        _sectionPath = sectionPath;
        Description = Describe(options);
    }

    /// <inheritdoc/>
    public string Description { get; }

    /// <inheritdoc/>
    public IReadOnlyList<string> Validate(HybridKVOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var failures = new List<string>();
        bool hasConnectionString = !string.IsNullOrWhiteSpace(_options.ConnectionString);
        bool hasUri = !string.IsNullOrWhiteSpace(_options.ContainerUri);
        if (hasConnectionString && hasUri)
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ConnectionString))} and " +
                $"{Name(nameof(HybridKVAzureOptions.ContainerUri))} are both set: set one (a connection string with " +
                $"{nameof(HybridKVAzureOptions.Container)}, or a container URI with a TokenCredential).");
        }
        else if (!hasConnectionString && !hasUri)
        {
            failures.Add($"Neither {Name(nameof(HybridKVAzureOptions.ConnectionString))} nor " +
                $"{Name(nameof(HybridKVAzureOptions.ContainerUri))} is set, but the Azure settings are: set a " +
                $"connection string with {nameof(HybridKVAzureOptions.Container)}, or a container URI with a " +
                "TokenCredential (or remove the Azure settings to keep the store in HybridKVOptions.Directory).");
        }
        else if (hasConnectionString)
        {
            ValidateConnectionString(failures);
        }
        else
        {
            ValidateContainerUri(failures);
        }

        if (string.Equals(_options.LogBlobPrefix, _options.CheckpointBlobPrefix, StringComparison.Ordinal))
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.LogBlobPrefix))} and " +
                $"{Name(nameof(HybridKVAzureOptions.CheckpointBlobPrefix))} are both '{_options.LogBlobPrefix}': " +
                "they must differ, or the log and the checkpoints would share a lease blob.");
        }

        if (_options.LeaseAcquireTimeout < TimeSpan.Zero)
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.LeaseAcquireTimeout))} is {_options.LeaseAcquireTimeout}: " +
                "it must be zero or more.");
        }

        if (failures.Count == 0)
        {
            // The device's and the checkpoint store's own checks, on the options this class makes: they name the
            // setting (BlobPrefix, SegmentSize, Lease, Retry...) and its allowed range, never a credential.
            try
            {
                DeviceOptions(options).Validate();
            }
            catch (ArgumentException error)
            {
                failures.Add($"The Azure log device's {error.ParamName} (from {OptionsTypeName}." +
                    $"{nameof(HybridKVAzureOptions.LogBlobPrefix)}, HybridKVOptions.LogSegmentSizeBits or " +
                    $"{OptionsTypeName}.{nameof(HybridKVAzureOptions.ConfigureDevice)}): {error.Message}");
            }

            try
            {
                CheckpointStoreOptions().Validate();
            }
            catch (ArgumentException error)
            {
                failures.Add($"The Azure checkpoint store's {error.ParamName} (from {OptionsTypeName}." +
                    $"{nameof(HybridKVAzureOptions.CheckpointBlobPrefix)} or {OptionsTypeName}." +
                    $"{nameof(HybridKVAzureOptions.ConfigureCheckpointStore)}): {error.Message}");
            }
        }

        return failures;
    }

    /// <inheritdoc/>
    public async Task<HybridKVStorage> OpenAsync(
        HybridKVOptions options, ILoggerFactory loggerFactory, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(options);
        AzureBlobLocation location = Location();
        AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(
            location, DeviceOptions(options), loggerFactory, cancellationToken).ConfigureAwait(false);
        AzureCheckpointStore checkpoints;
        try
        {
            checkpoints = await AzureCheckpointStore.OpenAsync(
                location, CheckpointStoreOptions(), loggerFactory, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await device.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        return new HybridKVStorage(device, checkpoints, async () =>
        {
            try
            {
                await checkpoints.DisposeAsync().ConfigureAwait(false);
            }
            finally
            {
                await device.DisposeAsync().ConfigureAwait(false);
            }
        });
    }

    /// <summary>The device's options: the log's segment size, this class's prefix and lease wait, then
    /// <see cref="HybridKVAzureOptions.ConfigureDevice"/>.</summary>
    internal AzurePageBlobDeviceOptions DeviceOptions(HybridKVOptions options)
    {
        var device = new AzurePageBlobDeviceOptions
        {
            BlobPrefix = _options.LogBlobPrefix,
            SegmentSize = options.LogSegmentSizeBits is >= 0 and < 63 ? 1L << options.LogSegmentSizeBits : 0,
            CreateContainer = _options.CreateContainer,
            Lease = new AzureLeaseOptions { AcquireTimeout = _options.LeaseAcquireTimeout },
        };
        return _options.ConfigureDevice is null ? device : _options.ConfigureDevice(device);
    }

    /// <summary>The checkpoint store's options: this class's prefix and lease wait, then
    /// <see cref="HybridKVAzureOptions.ConfigureCheckpointStore"/>.</summary>
    internal AzureCheckpointStoreOptions CheckpointStoreOptions()
    {
        var checkpoints = new AzureCheckpointStoreOptions
        {
            BlobPrefix = _options.CheckpointBlobPrefix,
            CreateContainer = _options.CreateContainer,
            Lease = new AzureLeaseOptions { AcquireTimeout = _options.LeaseAcquireTimeout },
        };
        return _options.ConfigureCheckpointStore is null ? checkpoints : _options.ConfigureCheckpointStore(checkpoints);
    }

    private AzureBlobLocation Location() => !string.IsNullOrWhiteSpace(_options.ConnectionString)
        ? AzureBlobLocation.FromConnectionString(_options.ConnectionString, _options.Container!)
        : AzureBlobLocation.FromUri(new Uri(_options.ContainerUri!, UriKind.Absolute), _credential!);

    private void ValidateConnectionString(List<string> failures)
    {
        if (string.IsNullOrWhiteSpace(_options.Container))
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.Container))} is not set: a connection string needs the " +
                "name of the container of the store's blobs.");
            return;
        }

        try
        {
            _ = AzureBlobLocation.FromConnectionString(_options.ConnectionString!, _options.Container);
        }
        catch (ArgumentException error)
        {
            // The message quotes the container name only.
            failures.Add($"{Name(nameof(HybridKVAzureOptions.Container))}: {error.Message}");
            return;
        }

        try
        {
            // Parses the connection string without a request. The SDK's message is not passed on: it may quote it.
            _ = new BlobContainerClient(_options.ConnectionString, _options.Container);
        }
        catch (Exception error) when (error is FormatException or ArgumentException or InvalidOperationException)
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ConnectionString))} is not a valid Azure Storage " +
                "connection string (its value is not shown: it holds a secret). Copy it whole from the storage " +
                "account's Access keys (DefaultEndpointsProtocol, AccountName, AccountKey, EndpointSuffix), or give " +
                "a BlobEndpoint with a SharedAccessSignature.");
        }
    }

    private void ValidateContainerUri(List<string> failures)
    {
        if (!string.IsNullOrWhiteSpace(_options.Container))
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.Container))} is '{_options.Container}', but " +
                $"{nameof(HybridKVAzureOptions.ContainerUri)} already names the container: leave " +
                $"{nameof(HybridKVAzureOptions.Container)} unset (it goes with a connection string).");
        }

        if (!Uri.TryCreate(_options.ContainerUri, UriKind.Absolute, out Uri? uri) || uri.Scheme is not ("https" or "http"))
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ContainerUri))} is not an absolute http(s) URI (its " +
                "value is not shown: it may carry a secret). It has the form " +
                "'https://ACCOUNT.blob.core.windows.net/CONTAINER'.");
            return;
        }

        if (uri.Scheme != "https")
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ContainerUri))} is '{Display(uri)}': it must be an https " +
                "URI, because the Azure SDK sends a TokenCredential's token only over HTTPS (use a connection string " +
                "for an emulator on http).");
            return;
        }

        if (_credential is null)
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ContainerUri))} is set, but there is no TokenCredential: " +
                "register one in the host's services (services.AddSingleton<TokenCredential>(new " +
                $"DefaultAzureCredential())) or set {OptionsTypeName}.{nameof(HybridKVAzureOptions.Credential)} in code.");
            return;
        }

        try
        {
            // Refuses a query string (a SAS) and a bad container name, quoting the URI without its query.
            _ = AzureBlobLocation.FromUri(uri, _credential);
        }
        catch (ArgumentException error)
        {
            failures.Add($"{Name(nameof(HybridKVAzureOptions.ContainerUri))}: {error.Message}");
        }
    }

    /// <summary>An option's name, and its configuration key when it was bound from configuration.</summary>
    private string Name(string property) => _sectionPath is null
        ? $"{OptionsTypeName}.{property}"
        : $"{OptionsTypeName}.{property} (configuration key '{_sectionPath}:{property}')";

    /// <summary>The container for log lines: its URI without query or user information when it can be known without a
    /// request, its name otherwise. Never throws, never quotes a connection string.</summary>
    private static string Describe(HybridKVAzureOptions options)
    {
        Uri? uri = null;
        try
        {
            if (!string.IsNullOrWhiteSpace(options.ConnectionString) && !string.IsNullOrWhiteSpace(options.Container))
            {
                uri = new BlobContainerClient(options.ConnectionString, options.Container).Uri;
            }
            else if (!string.IsNullOrWhiteSpace(options.ContainerUri) &&
                     Uri.TryCreate(options.ContainerUri, UriKind.Absolute, out Uri? parsed))
            {
                uri = parsed;
            }
        }
        catch (Exception error) when (error is FormatException or ArgumentException or InvalidOperationException)
        {
            // An invalid connection string: the validator reports it.
        }

        string container = uri is { IsAbsoluteUri: true } ? Display(uri) : options.Container ?? "(not set)";
        return $"Azure Storage container '{container}'";
    }

    /// <summary>A URI without its query (where a SAS lives), fragment and user information.</summary>
    private static string Display(Uri uri) =>
        uri.GetComponents(UriComponents.SchemeAndServer | UriComponents.Path, UriFormat.UriEscaped);
}
