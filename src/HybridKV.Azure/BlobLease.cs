using System.Diagnostics;
using System.Globalization;
using Azure;
using Azure.Storage.Blobs;
using Azure.Storage.Blobs.Models;
using Azure.Storage.Blobs.Specialized;
using Microsoft.Extensions.Logging;

namespace HybridKV.Azure;

/// <summary>
/// One writer per log device or checkpoint store: a lease on a small blob (<c>{prefix}.lock</c>), acquired with a
/// fresh lease id, renewed in the background every third of its duration, released on disposal. A writer that dies
/// leaves the lease to expire by itself after its duration. When a renewal is refused (another writer broke the
/// lease and took it) or the lease may have expired (renewals failed for a whole duration), the lease is lost for good:
/// <see cref="ThrowIfLost"/> throws from then on, and the owner stops writing.
/// </summary>
/// <remarks>
/// The lease id also fences the blobs themselves where that is possible: the page-blob device leases every segment
/// blob with this same id and sends it with every write, so that the service refuses the writes of a writer whose
/// blobs another writer took over, whatever that writer believes.
/// </remarks>
internal sealed class BlobLease : IAsyncDisposable
{
    private readonly BlobClient _blob;
    private readonly BlobLeaseClient _client;
    private readonly string _container;
    private readonly TimeSpan _duration;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stop = new();
    private readonly object _lostLock = new();
    private Task _renewals = Task.CompletedTask;
    private long _lastRenewedTimestamp;
    private BlobLeaseLostException? _lost;
    private int _disposed;

    private BlobLease(BlobContainerClient container, string blobName, TimeSpan duration, ILogger logger)
    {
        _blob = container.GetBlobClient(blobName);
        LeaseId = Guid.NewGuid().ToString();
        _client = _blob.GetBlobLeaseClient(LeaseId);
        _container = BlobNames.Display(container.Uri);
        _duration = duration;
        _logger = logger;
    }

    /// <summary>The lease id: the writer's identity toward the service.</summary>
    public string LeaseId { get; }

    /// <summary>The lease blob's name.</summary>
    public string BlobName => _blob.Name;

    /// <summary>Whether the lease was lost.</summary>
    public bool IsLost => Volatile.Read(ref _lost) is not null;

    /// <summary>
    /// What a writer of a container does first, the device and the checkpoint store alike: a client for
    /// <paramref name="location"/>, the container created if <paramref name="createContainer"/>, then the lease on
    /// <paramref name="leaseBlobName"/>. A failure of Azure Storage surfaces through <paramref name="fail"/>; another
    /// writer's lease as a <see cref="BlobStoreInUseException"/>.
    /// </summary>
    public static async Task<(BlobContainerClient Container, BlobLease Lease)> OpenContainerAsync(
        AzureBlobLocation location, BlobClientOptions? clientOptions, AzureRetryOptions retry, bool createContainer,
        string leaseBlobName, AzureLeaseOptions leaseOptions, ILogger logger, AzureCalls.Failure fail,
        CancellationToken cancellationToken)
    {
        BlobContainerClient container = location.CreateClient(
            AzurePageBlobDeviceOptions.ClientOptionsWith(clientOptions, retry));
        if (createContainer)
        {
            await AzureCalls.RunAsync(token => container.CreateIfNotExistsAsync(cancellationToken: token),
                $"Creating the container '{BlobNames.Display(container.Uri)}'", retry.MaxTotalTime, fail,
                cancellationToken).ConfigureAwait(false);
        }

        try
        {
            BlobLease lease = await AcquireAsync(container, leaseBlobName, leaseOptions.Duration,
                leaseOptions.AcquireTimeout, retry, logger, cancellationToken).ConfigureAwait(false);
            return (container, lease);
        }
        catch (IOException error) when (error is not BlobStoreInUseException)
        {
            throw fail(error.Message, error.InnerException ?? error);
        }
    }

    /// <summary>
    /// Creates the lease blob if needed and acquires its lease, waiting up to <paramref name="acquireTimeout"/> for a
    /// lease held by another writer to be released or to expire.
    /// </summary>
    /// <exception cref="BlobStoreInUseException">Another writer kept the lease for all that time.</exception>
    public static async Task<BlobLease> AcquireAsync(
        BlobContainerClient container, string blobName, TimeSpan duration, TimeSpan acquireTimeout,
        AzureRetryOptions retry, ILogger logger, CancellationToken cancellationToken)
    {
        var lease = new BlobLease(container, blobName, duration, logger);
        await lease.AcquireAsync(acquireTimeout, retry, cancellationToken).ConfigureAwait(false);
        lease._renewals = Task.Run(lease.RenewAsync, CancellationToken.None);
        return lease;
    }

    /// <summary>Throws once the lease is lost.</summary>
    /// <exception cref="BlobLeaseLostException">The lease was lost.</exception>
    public void ThrowIfLost()
    {
        if (Volatile.Read(ref _lost) is { } lost)
        {
            throw lost;
        }
    }

    /// <summary>
    /// Renews the lease now, so that it lasts at least its duration from here: before a write that the service cannot
    /// fence (a checkpoint manifest), the writer proves it still holds the lease.
    /// </summary>
    /// <exception cref="BlobLeaseLostException">The lease was lost (now or before).</exception>
    public async Task RenewNowAsync(AzureRetryOptions retry, CancellationToken cancellationToken)
    {
        ThrowIfLost();
        try
        {
            await AzureCalls.RunAsync(token => _client.RenewAsync(cancellationToken: token),
                $"Renewing the lease on '{BlobName}' in '{_container}'", retry.MaxTotalTime,
                (message, inner) => new IOException(message, inner), cancellationToken).ConfigureAwait(false);
            Volatile.Write(ref _lastRenewedTimestamp, Stopwatch.GetTimestamp());
        }
        catch (IOException error) when (error.InnerException is RequestFailedException { Status: 409 or 412 })
        {
            MarkLost("the service refused to renew it: another writer took it over", error.InnerException);
        }

        ThrowIfLost();
    }

    /// <summary>Records the lease as lost (also when the service refused a write made with its id).</summary>
    public BlobLeaseLostException MarkLost(string reason, Exception? cause)
    {
        BlobLeaseLostException lost;
        lock (_lostLock)
        {
            if (_lost is not null)
            {
                return _lost;
            }

            lost = new BlobLeaseLostException(_container, BlobName, reason, cause);
            Volatile.Write(ref _lost, lost);
        }

        AzureLog.LeaseLost(_logger, _container, BlobName, reason);
        _stop.Cancel();

        return lost;
    }

    /// <summary>Stops renewing and releases the lease (unless lost); a failed release is logged: the lease then
    /// expires by itself.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        await _stop.CancelAsync().ConfigureAwait(false);
        await _renewals.ConfigureAwait(false);
        if (!IsLost)
        {
            try
            {
                using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(10));
                await _client.ReleaseAsync(cancellationToken: deadline.Token).ConfigureAwait(false);
                AzureLog.LeaseReleased(_logger, _container, BlobName);
            }
            catch (Exception error) when (error is RequestFailedException or OperationCanceledException
                                              or AggregateException or IOException or HttpRequestException)
            {
                AzureLog.LeaseReleaseFailed(_logger, _container, BlobName, AzureCalls.Describe(error));
            }
        }

        // _stop is not disposed: a write refused after disposal may still mark the lease lost and cancel it, and a
        // source without a timer holds nothing to release.
    }

    private async Task AcquireAsync(TimeSpan acquireTimeout, AzureRetryOptions retry, CancellationToken cancellationToken)
    {
        static Exception Fail(string message, Exception inner) => new IOException(message, inner);
        await AzureCalls.RunAsync(async token =>
        {
            try
            {
                // An empty blob, created once: it exists to carry the lease and its holder's description.
                await _blob.UploadAsync(BinaryData.Empty, new BlobUploadOptions
                {
                    Conditions = new BlobRequestConditions { IfNoneMatch = ETag.All },
                }, token).ConfigureAwait(false);
            }
            catch (RequestFailedException error) when (error.Status is 409 or 412)
            {
                // It exists (and may be leased).
            }
        }, $"Creating the lease blob '{BlobName}' in '{_container}'", retry.MaxTotalTime, Fail, cancellationToken)
            .ConfigureAwait(false);

        long started = Stopwatch.GetTimestamp();
        bool announced = false;
        while (true)
        {
            try
            {
                await AzureCalls.RunAsync(token => _client.AcquireAsync(_duration, cancellationToken: token),
                    $"Acquiring the lease on '{BlobName}' in '{_container}'", retry.MaxTotalTime, Fail,
                    cancellationToken).ConfigureAwait(false);
                break;
            }
            catch (IOException error) when (error.InnerException is RequestFailedException { Status: 409 } held)
            {
                string holder = await DescribeHolderAsync(cancellationToken).ConfigureAwait(false);
                TimeSpan waited = Stopwatch.GetElapsedTime(started);
                if (waited >= acquireTimeout)
                {
                    throw new BlobStoreInUseException(_container, BlobName, holder, acquireTimeout, held);
                }

                if (!announced)
                {
                    AzureLog.LeaseWaiting(_logger, _container, BlobName, holder);
                    announced = true;
                }

                // Polling: the service has no way to wait for a lease. A second is small against a lease's 15-60 s.
                TimeSpan pause = TimeSpan.FromSeconds(1);
                await Task.Delay(pause < acquireTimeout - waited ? pause : acquireTimeout - waited, cancellationToken)
                    .ConfigureAwait(false);
            }
        }

        Volatile.Write(ref _lastRenewedTimestamp, Stopwatch.GetTimestamp());
        AzureLog.LeaseAcquired(_logger, _container, BlobName);
        try
        {
            using var self = Process.GetCurrentProcess();
            var metadata = new Dictionary<string, string>
            {
                ["holder"] = string.Create(CultureInfo.InvariantCulture,
                    $"process {Environment.ProcessId} on {AsciiOnly(Environment.MachineName)}, since {DateTimeOffset.UtcNow:u}"),
            };
            await _blob.SetMetadataAsync(metadata, new BlobRequestConditions { LeaseId = LeaseId }, cancellationToken)
                .ConfigureAwait(false);
        }
        catch (RequestFailedException error)
        {
            // The description only helps the next writer's message; the lease is what counts.
            Debug.WriteLine($"HybridKV could not describe the holder of '{BlobName}': {AzureCalls.Describe(error)}");
        }
    }

    private async Task<string> DescribeHolderAsync(CancellationToken cancellationToken)
    {
        try
        {
            BlobProperties properties = await _blob.GetPropertiesAsync(cancellationToken: cancellationToken)
                .ConfigureAwait(false);
            return properties.Metadata.TryGetValue("holder", out string? holder) ? "held by " + holder : "holder unknown";
        }
        catch (RequestFailedException)
        {
            return "holder unknown";
        }
    }

    private async Task RenewAsync()
    {
        TimeSpan interval = _duration / 3;
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(interval, _stop.Token).ConfigureAwait(false);
                await _client.RenewAsync(cancellationToken: _stop.Token).ConfigureAwait(false);
                Volatile.Write(ref _lastRenewedTimestamp, Stopwatch.GetTimestamp());
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (RequestFailedException error) when (error.Status is 409 or 412)
            {
                MarkLost($"the service refused to renew it ({AzureCalls.Describe(error)}): another writer took it over",
                    error);
                return;
            }
            catch (Exception error) when (error is RequestFailedException or AggregateException or IOException
                                              or HttpRequestException or OperationCanceledException)
            {
                AzureLog.LeaseRenewalFailed(_logger, _container, BlobName, AzureCalls.Describe(error));
                TimeSpan since = Stopwatch.GetElapsedTime(Volatile.Read(ref _lastRenewedTimestamp));
                if (since >= _duration - interval)
                {
                    // It may expire before the next try: another writer could take it then.
                    MarkLost($"no renewal succeeded for {since.TotalSeconds:F0} s of its {_duration.TotalSeconds:F0} s",
                        error);
                    return;
                }
            }
        }
    }

    private static string AsciiOnly(string text) =>
        new(text.Select(c => char.IsAscii(c) && !char.IsControl(c) ? c : '?').ToArray());
}
