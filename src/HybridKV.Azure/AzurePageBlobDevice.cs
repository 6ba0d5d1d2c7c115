using System.Collections.Concurrent;
using System.Globalization;
using Azure;
using Azure.Core;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using HybridKV.Devices;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace HybridKV.Azure;

/// <summary>
/// A log device on Azure page blobs: one page blob per segment (<c>{prefix}.{segment}</c>), created with the segment's
/// size when first written; 512-byte sectors (the page blob's page); writes split into Put Page requests of at most
/// 4 MiB, many in flight; ranged reads straight into the caller's memory; truncation deletes whole segment blobs.
/// </summary>
/// <remarks>
/// <para>One writer: opening acquires a lease on <c>{prefix}.lock</c> (renewed in the background) and then leases every
/// segment blob, and the label, with the same lease id, breaking the lease a previous writer left on them. Every write
/// and delete carries the lease id, so the service itself refuses a writer whose blobs another writer has taken over;
/// such a writer, and one whose lease expired, stops writing (<see cref="BlobLeaseLostException"/>).</para>
/// <para>Transient failures are retried by the Azure SDK with exponential backoff within
/// <see cref="AzureRetryOptions.MaxTotalTime"/>; every other failure is a <see cref="StorageDeviceException"/> naming
/// the blob, the range and the HTTP status. A Put Page is durable once acknowledged, so <see cref="StorageDevice.FlushAsync"/>
/// only checks that the lease is still held.</para>
/// </remarks>
public sealed class AzurePageBlobDevice : StorageDevice, IAsyncDisposable
{
    /// <summary>The page blob's page: the device's sector size.</summary>
    public const int PageSize = 512;

    private readonly BlobContainerClient _container;
    private readonly AzurePageBlobDeviceOptions _options;
    private readonly BlobLease _lease;
    private readonly ILogger _logger;
    private readonly string _containerDisplay;

    // A segment is in this map once its blob exists and carries this writer's lease (the task completes then). A
    // failed creation is removed, so that the next write tries again.
    private readonly ConcurrentDictionary<long, Lazy<Task>> _segments = new();
    private readonly SemaphoreSlim _requests;
    private readonly SemaphoreSlim _labelGate = new(1, 1);
    private bool _labelLeased;

    private AzurePageBlobDevice(
        BlobContainerClient container, AzurePageBlobDeviceOptions options, BlobLease lease, ILogger logger)
        : base(PageSize, options.SegmentSize, options.Capacity)
    {
        _container = container;
        _options = options;
        _lease = lease;
        _logger = logger;
        _containerDisplay = BlobNames.Display(container.Uri);
        _requests = new SemaphoreSlim(options.MaxConcurrentRequests, options.MaxConcurrentRequests);
    }

    /// <summary>The container's URI, without any query string.</summary>
    public string Container => _containerDisplay;

    /// <summary>The prefix of the device's blob names.</summary>
    public string BlobPrefix => _options.BlobPrefix;

    /// <summary>Whether this device lost its lease and so stopped writing.</summary>
    public bool LeaseLost => _lease.IsLost;

    /// <summary>Opens a device in the container that a connection string and a container name designate.</summary>
    /// <inheritdoc cref="OpenAsync(AzureBlobLocation, AzurePageBlobDeviceOptions?, ILoggerFactory?, CancellationToken)"/>
    public static Task<AzurePageBlobDevice> OpenAsync(
        string connectionString, string containerName, AzurePageBlobDeviceOptions? options = null,
        ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default) =>
        OpenAsync(AzureBlobLocation.FromConnectionString(connectionString, containerName), options, loggerFactory,
            cancellationToken);

    /// <summary>Opens a device in the container at <paramref name="containerUri"/>, authenticated with
    /// <paramref name="credential"/>.</summary>
    /// <inheritdoc cref="OpenAsync(AzureBlobLocation, AzurePageBlobDeviceOptions?, ILoggerFactory?, CancellationToken)"/>
    public static Task<AzurePageBlobDevice> OpenAsync(
        Uri containerUri, TokenCredential credential, AzurePageBlobDeviceOptions? options = null,
        ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default) =>
        OpenAsync(AzureBlobLocation.FromUri(containerUri, credential), options, loggerFactory, cancellationToken);

    /// <summary>
    /// Opens (or creates) a device: creates the container if allowed, acquires the writer's lease (waiting up to
    /// <see cref="AzureLeaseOptions.AcquireTimeout"/> for one a dead writer left), takes over the segment blobs found,
    /// and restores the begin address from the lowest segment.
    /// </summary>
    /// <param name="location">The container.</param>
    /// <param name="options">The device's options, or <see langword="null"/> for the defaults.</param>
    /// <param name="loggerFactory">Where the device logs (lease events), or <see langword="null"/>.</param>
    /// <param name="cancellationToken">Cancels opening.</param>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="BlobStoreInUseException">Another writer holds the device's lease.</exception>
    /// <exception cref="StorageDeviceException">Azure Storage failed.</exception>
    public static async Task<AzurePageBlobDevice> OpenAsync(
        AzureBlobLocation location, AzurePageBlobDeviceOptions? options = null, ILoggerFactory? loggerFactory = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(location);
        options ??= new AzurePageBlobDeviceOptions();
        options.Validate();
        ILogger logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger<AzurePageBlobDevice>();
        (BlobContainerClient container, BlobLease lease) = await BlobLease.OpenContainerAsync(location,
            options.ClientOptions, options.Retry, options.CreateContainer, options.BlobPrefix + ".lock", options.Lease,
            logger, DeviceError, cancellationToken).ConfigureAwait(false);
        var device = new AzurePageBlobDevice(container, options, lease, logger);
        try
        {
            await device.TakeOverAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await device.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        return device;
    }

    /// <summary>The name of a segment's page blob.</summary>
    public string SegmentBlobName(long segment) =>
        $"{_options.BlobPrefix}.{segment.ToString(CultureInfo.InvariantCulture)}";

    /// <summary>The name of the label blob.</summary>
    public string LabelBlobName => _options.BlobPrefix + ".label";

    /// <summary>Names the device by its container and prefix, for messages.</summary>
    public override string ToString() => $"'{_containerDisplay}/{_options.BlobPrefix}'";

    /// <inheritdoc/>
    public override string DescribeAddress(long address) =>
        $"'{_containerDisplay}/{SegmentBlobName(address >> SegmentSizeBits)}' at offset {address & (SegmentSize - 1)}";

    /// <inheritdoc/>
    protected override async ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
    {
        ThrowIfLeaseLost();
        await EnsureSegmentAsync(segment, cancellationToken).ConfigureAwait(false);
        PageBlobClient blob = _container.GetPageBlobClient(SegmentBlobName(segment));
        await ForEachRequestAsync(offset, source.Length, (at, start, length, token) =>
            PutPagesAsync(blob, at, source.Slice(start, length), token), cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override async ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        BlobClient blob = _container.GetBlobClient(SegmentBlobName(segment));
        await ForEachRequestAsync(offset, destination.Length, (at, start, length, token) =>
            GetPagesAsync(blob, at, destination.Slice(start, length), token), cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    protected override async ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken)
    {
        ThrowIfLeaseLost();
        _segments.TryRemove(segment, out _);
        string name = SegmentBlobName(segment);
        await DeleteLeasedAsync(_container.GetBlobClient(name), cancellationToken).ConfigureAwait(false);
        AzureLog.SegmentDeleted(_logger, _containerDisplay, name);
    }

    /// <inheritdoc/>
    protected override ValueTask FlushCoreAsync(CancellationToken cancellationToken)
    {
        // An acknowledged Put Page is durable; what a flush must still refuse is to vouch for a writer that lost its lease.
        ThrowIfLeaseLost();
        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override async ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken)
    {
        BlobClient blob = _container.GetBlobClient(LabelBlobName);
        byte[]? label = await RunAsync(async token =>
        {
            try
            {
                Response<BlobDownloadResult> result = await blob.DownloadContentAsync(token).ConfigureAwait(false);
                return result.Value.Content.ToArray();
            }
            catch (RequestFailedException error) when (error.Status == 404)
            {
                return null;
            }
        }, $"Reading the label '{_containerDisplay}/{LabelBlobName}'", cancellationToken).ConfigureAwait(false);
        if (label is null && !_segments.IsEmpty)
        {
            throw new InvalidDataException(
                $"The container '{_containerDisplay}' holds segment blobs ({_options.BlobPrefix}.N) but no label " +
                $"'{LabelBlobName}' saying which log they are: it was removed, or they were written by something else. " +
                "Move them away, or use another prefix.");
        }

        return label;
    }

    /// <inheritdoc/>
    protected override async ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken)
    {
        ThrowIfLeaseLost();
        BlobClient blob = _container.GetBlobClient(LabelBlobName);
        string what = $"Writing the label '{_containerDisplay}/{LabelBlobName}'";
        await _labelGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (!_labelLeased)
            {
                bool created = await RunAsync(async token =>
                {
                    try
                    {
                        await blob.UploadAsync(BinaryData.FromBytes(label), new BlobUploadOptions
                        {
                            Conditions = new BlobRequestConditions { IfNoneMatch = ETag.All },
                        }, token).ConfigureAwait(false);
                        return true;
                    }
                    catch (RequestFailedException error) when (error.Status is 409 or 412)
                    {
                        return false;
                    }
                }, what, cancellationToken).ConfigureAwait(false);
                await TakeOverBlobAsync(blob, cancellationToken).ConfigureAwait(false);
                _labelLeased = true;
                if (created)
                {
                    return;
                }
            }

            // One Put Blob replaces the whole label atomically; the lease stays on the blob.
            await RunAsync(token => blob.UploadAsync(BinaryData.FromBytes(label), new BlobUploadOptions
            {
                Conditions = new BlobRequestConditions { LeaseId = _lease.LeaseId },
            }, token), what, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _labelGate.Release();
        }
    }

    /// <inheritdoc/>
    protected override async ValueTask EraseCoreAsync(CancellationToken cancellationToken)
    {
        ThrowIfLeaseLost();
        (List<long> segments, bool hasLabel) = await ListAsync(cancellationToken).ConfigureAwait(false);
        _segments.Clear();
        foreach (long segment in segments)
        {
            await DeleteLeasedAsync(_container.GetBlobClient(SegmentBlobName(segment)), cancellationToken)
                .ConfigureAwait(false);
        }

        if (hasLabel)
        {
            await DeleteLeasedAsync(_container.GetBlobClient(LabelBlobName), cancellationToken).ConfigureAwait(false);
        }

        _labelLeased = false;
    }

    /// <summary>Releases the lease (the next writer gets it at once) and the device.</summary>
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
            _labelGate.Dispose();
        }

        base.Dispose(disposing);
    }

    private static StorageDeviceException DeviceError(string message, Exception inner) => new(message, inner);

    private Task<T> RunAsync<T>(Func<CancellationToken, Task<T>> call, string what, CancellationToken cancellationToken) =>
        AzureCalls.RunAsync(call, what, _options.Retry.MaxTotalTime, DeviceError, cancellationToken);

    private Task RunAsync(Func<CancellationToken, Task> call, string what, CancellationToken cancellationToken) =>
        AzureCalls.RunAsync(call, what, _options.Retry.MaxTotalTime, DeviceError, cancellationToken);

    private void ThrowIfLeaseLost()
    {
        try
        {
            _lease.ThrowIfLost();
        }
        catch (BlobLeaseLostException lost)
        {
            throw new StorageDeviceException($"{this} stopped writing: {lost.Message}", lost);
        }
    }

    /// <summary>Splits [offset, offset + length) of a segment into requests of at most MaxRequestBytes, all in flight
    /// at once (bounded by MaxConcurrentRequests across the device).</summary>
    private async Task ForEachRequestAsync(
        long offset, int length, Func<long, int, int, CancellationToken, Task> request, CancellationToken cancellationToken)
    {
        int size = _options.MaxRequestBytes;
        if (length <= size)
        {
            await request(offset, 0, length, cancellationToken).ConfigureAwait(false);
            return;
        }

        var requests = new List<Task>((length + size - 1) / size);
        for (int start = 0; start < length; start += size)
        {
            requests.Add(request(offset + start, start, Math.Min(size, length - start), cancellationToken));
        }

        await Task.WhenAll(requests).ConfigureAwait(false);
    }

    private async Task PutPagesAsync(PageBlobClient blob, long offset, ReadOnlyMemory<byte> pages, CancellationToken cancellationToken)
    {
        await _requests.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await RunAsync(async token =>
            {
                try
                {
                    using var content = new ReadOnlyMemoryStream(pages);
                    await blob.UploadPagesAsync(content, offset, new PageBlobUploadPagesOptions
                    {
                        Conditions = new PageBlobRequestConditions { LeaseId = _lease.LeaseId },
                    }, token).ConfigureAwait(false);
                }
                catch (RequestFailedException error) when (IsLeaseRefusal(error))
                {
                    throw _lease.MarkLost($"the service refused a write to '{blob.Name}' ({AzureCalls.Describe(error)}): " +
                                          "another writer took the blobs over", error);
                }
            }, $"Writing {pages.Length} bytes at offset {offset} of '{_containerDisplay}/{blob.Name}'", cancellationToken)
                .ConfigureAwait(false);
        }
        finally
        {
            _requests.Release();
        }
    }

    private async Task GetPagesAsync(BlobClient blob, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        await _requests.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await RunAsync(async token =>
            {
                Response<BlobDownloadStreamingResult> response;
                try
                {
                    response = await blob.DownloadStreamingAsync(new BlobDownloadOptions
                    {
                        Range = new HttpRange(offset, destination.Length),
                    }, token).ConfigureAwait(false);
                }
                catch (RequestFailedException error) when (error.Status == 404)
                {
                    // A segment never written (or not yet created): unwritten space reads as zeros.
                    destination.Span.Clear();
                    return;
                }

                await using Stream content = response.Value.Content;
                int total = 0;
                while (total < destination.Length)
                {
                    int read = await content.ReadAsync(destination[total..], token).ConfigureAwait(false);
                    if (read == 0)
                    {
                        throw new StorageDeviceException(
                            $"Reading {destination.Length} bytes at offset {offset} of '{_containerDisplay}/{blob.Name}' " +
                            $"returned only {total}: the blob is smaller than the segment size {SegmentSize} (was it " +
                            "written with another segment size?).");
                    }

                    total += read;
                }
            }, $"Reading {destination.Length} bytes at offset {offset} of '{_containerDisplay}/{blob.Name}'",
                cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _requests.Release();
        }
    }

    /// <summary>Creates the segment's page blob with the segment size if it does not exist, and leases it.</summary>
    private async Task EnsureSegmentAsync(long segment, CancellationToken cancellationToken)
    {
        Lazy<Task> ready = _segments.GetOrAdd(segment, s => new Lazy<Task>(() => CreateSegmentAsync(s)));
        try
        {
            await ready.Value.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception) when (!cancellationToken.IsCancellationRequested)
        {
            _segments.TryRemove(new KeyValuePair<long, Lazy<Task>>(segment, ready));
            throw;
        }
    }

    private async Task CreateSegmentAsync(long segment)
    {
        PageBlobClient blob = _container.GetPageBlobClient(SegmentBlobName(segment));
        Response<BlobContentInfo>? created = await RunAsync(token => blob.CreateIfNotExistsAsync(SegmentSize,
                cancellationToken: token), $"Creating the segment blob '{_containerDisplay}/{blob.Name}'",
            CancellationToken.None).ConfigureAwait(false);
        await TakeOverBlobAsync(blob, CancellationToken.None).ConfigureAwait(false);
        if (created is not null)
        {
            AzureLog.SegmentCreated(_logger, _containerDisplay, blob.Name);
        }
    }

    /// <summary>Leases a blob with this writer's lease id, breaking a lease that a previous writer left on it.</summary>
    /// <returns>Whether another writer's lease was broken.</returns>
    private Task<bool> TakeOverBlobAsync(BlobBaseClient blob, CancellationToken cancellationToken) =>
        RunAsync(async token =>
        {
            BlobLeaseClient lease = blob.GetBlobLeaseClient(_lease.LeaseId);
            try
            {
                await lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: token)
                    .ConfigureAwait(false);
                return false;
            }
            catch (RequestFailedException error) when (error.Status == 409)
            {
                // This writer holds the device's lease, so the blob's lease is a previous writer's: break it at once.
                _lease.ThrowIfLost();
                await blob.GetBlobLeaseClient().BreakAsync(TimeSpan.Zero, cancellationToken: token).ConfigureAwait(false);
                await lease.AcquireAsync(BlobLeaseClient.InfiniteLeaseDuration, cancellationToken: token)
                    .ConfigureAwait(false);
                return true;
            }
        }, $"Leasing '{_containerDisplay}/{blob.Name}'", cancellationToken);

    private async Task DeleteLeasedAsync(BlobBaseClient blob, CancellationToken cancellationToken)
    {
        var conditions = new BlobRequestConditions { LeaseId = _lease.LeaseId };
        await RunAsync(async token =>
        {
            try
            {
                await blob.DeleteIfExistsAsync(DeleteSnapshotsOption.IncludeSnapshots, conditions, token)
                    .ConfigureAwait(false);
            }
            catch (RequestFailedException error) when (error.IsStatus(412, "LeaseNotPresentWithBlobOperation"))
            {
                // Created by a writer that died before leasing it.
                await blob.DeleteIfExistsAsync(DeleteSnapshotsOption.IncludeSnapshots, cancellationToken: token)
                    .ConfigureAwait(false);
            }
            catch (RequestFailedException error) when (IsLeaseRefusal(error))
            {
                throw _lease.MarkLost($"the service refused to delete '{blob.Name}' ({AzureCalls.Describe(error)}): " +
                                      "another writer took the blobs over", error);
            }
        }, $"Deleting '{_containerDisplay}/{blob.Name}'", cancellationToken).ConfigureAwait(false);
    }

    private static bool IsLeaseRefusal(RequestFailedException error) =>
        error.Status == 412 && error.ErrorCode is { } code && code.StartsWith("Lease", StringComparison.Ordinal);

    /// <summary>The segments and whether a label exists, from a listing of the prefix.</summary>
    private async Task<(List<long> Segments, bool HasLabel)> ListAsync(CancellationToken cancellationToken)
    {
        string prefix = _options.BlobPrefix + ".";
        return await RunAsync(async token =>
        {
            var segments = new List<long>();
            bool hasLabel = false;
            await foreach (BlobItem item in _container.GetBlobsAsync(BlobTraits.None, BlobStates.None, prefix, token)
                               .ConfigureAwait(false))
            {
                string suffix = item.Name[prefix.Length..];
                if (suffix == "label")
                {
                    hasLabel = true;
                }
                else if (long.TryParse(suffix, NumberStyles.None, CultureInfo.InvariantCulture, out long segment))
                {
                    segments.Add(segment);
                }
            }

            segments.Sort();
            return (segments, hasLabel);
        }, $"Listing '{_containerDisplay}/{prefix}*'", cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Leases every segment blob and the label with this writer's id (fencing off a previous writer) and
    /// restores the begin address.</summary>
    private async Task TakeOverAsync(CancellationToken cancellationToken)
    {
        (List<long> segments, bool hasLabel) = await ListAsync(cancellationToken).ConfigureAwait(false);
        var blobs = segments.Select(s => (BlobBaseClient)_container.GetBlobClient(SegmentBlobName(s))).ToList();
        if (hasLabel)
        {
            blobs.Add(_container.GetBlobClient(LabelBlobName));
        }

        int broken = 0;
        await Parallel.ForEachAsync(blobs, new ParallelOptions
        {
            MaxDegreeOfParallelism = Math.Min(16, _options.MaxConcurrentRequests),
            CancellationToken = cancellationToken,
        }, async (blob, token) =>
        {
            if (await TakeOverBlobAsync(blob, token).ConfigureAwait(false))
            {
                Interlocked.Increment(ref broken);
            }
        }).ConfigureAwait(false);

        foreach (long segment in segments)
        {
            _segments[segment] = new Lazy<Task>(() => Task.CompletedTask);
        }

        _labelLeased = hasLabel;
        if (segments.Count > 0)
        {
            RestoreBeginAddress(segments[0] << SegmentSizeBits);
        }

        if (broken > 0)
        {
            AzureLog.TookOver(_logger, _containerDisplay, _options.BlobPrefix, broken);
        }

        AzureLog.DeviceOpened(_logger, _containerDisplay, _options.BlobPrefix, segments.Count, BeginAddress);
    }
}
