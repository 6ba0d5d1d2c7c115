using Azure.Core;
using Azure.Storage.Blobs;

namespace HybridKV.Azure;

/// <summary>
/// A blob container and how to reach it: from a connection string and a container name, or from the container's URI
/// and a <see cref="TokenCredential"/> (Microsoft Entra ID, for instance a managed identity). The credential is used
/// only to build the Azure SDK's client; nothing here puts it, the account key or a SAS token into a message.
/// </summary>
public sealed class AzureBlobLocation
{
    private readonly string? _connectionString;
    private readonly Uri? _containerUri;
    private readonly TokenCredential? _credential;

    private AzureBlobLocation(string? connectionString, string containerName, Uri? containerUri, TokenCredential? credential)
    {
        _connectionString = connectionString;
        _containerUri = containerUri;
        _credential = credential;
        ContainerName = containerName;
    }

    /// <summary>The container's name.</summary>
    public string ContainerName { get; }

    /// <summary>A container reached through a storage connection string (account key, SAS, or the development
    /// storage emulator's).</summary>
    /// <param name="connectionString">The storage account's connection string.</param>
    /// <param name="containerName">The container: 3 to 63 lower-case letters, digits and single hyphens.</param>
    /// <exception cref="ArgumentException">An argument is empty, or the container name is not a valid one.</exception>
    public static AzureBlobLocation FromConnectionString(string connectionString, string containerName)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(connectionString);
        CheckContainerName(containerName, nameof(containerName));
        return new AzureBlobLocation(connectionString, containerName, null, null);
    }

    /// <summary>A container reached by its URI with a token credential.</summary>
    /// <param name="containerUri">The container's URI, for example <c>https://account.blob.core.windows.net/hybridkv</c>.
    /// It must not carry a SAS token: use a connection string for SAS.</param>
    /// <param name="credential">The credential, for example <c>DefaultAzureCredential</c> from Azure.Identity.</param>
    /// <exception cref="ArgumentException">The URI is not absolute, names no container, or carries a query.</exception>
    public static AzureBlobLocation FromUri(Uri containerUri, TokenCredential credential)
    {
        ArgumentNullException.ThrowIfNull(containerUri);
        ArgumentNullException.ThrowIfNull(credential);
        if (!containerUri.IsAbsoluteUri || containerUri.Scheme is not ("https" or "http"))
        {
            throw new ArgumentException(
                $"The container URI must be an absolute http(s) URI; it was '{BlobNames.Display(containerUri)}'.",
                nameof(containerUri));
        }

        if (!string.IsNullOrEmpty(containerUri.Query))
        {
            // Not quoted: the query is where a SAS token would be.
            throw new ArgumentException(
                $"The container URI '{BlobNames.Display(containerUri)}' carries a query string; with a token credential " +
                "it must not (a SAS goes in a connection string instead).", nameof(containerUri));
        }

        string name = new BlobUriBuilder(containerUri).BlobContainerName;
        CheckContainerName(name, nameof(containerUri));
        return new AzureBlobLocation(null, name, containerUri, credential);
    }

    /// <summary>Builds the SDK client with <paramref name="options"/> (whose retry settings the caller set).</summary>
    internal BlobContainerClient CreateClient(BlobClientOptions options) => _connectionString is not null
        ? new BlobContainerClient(_connectionString, ContainerName, options)
        : new BlobContainerClient(_containerUri!, _credential!, options);

    private static void CheckContainerName(string name, string parameter)
    {
        bool valid = name is { Length: >= 3 and <= 63 } && !name.Contains("--", StringComparison.Ordinal) &&
                     char.IsAsciiLetterOrDigit(name[0]) && char.IsAsciiLetterOrDigit(name[^1]) &&
                     name.All(c => char.IsAsciiLetterLower(c) || char.IsAsciiDigit(c) || c == '-');
        if (!valid)
        {
            throw new ArgumentException(
                $"'{name}' is not a valid blob container name: 3 to 63 lower-case letters, digits and hyphens, starting " +
                "and ending with a letter or digit, no two hyphens in a row.", parameter);
        }
    }
}
