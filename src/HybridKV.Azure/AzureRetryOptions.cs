using Azure.Core;
using Azure.Storage.Blobs;

namespace HybridKV.Azure;

/// <summary>
/// How the Azure package retries transient failures (HTTP 408, 429, 500, 502, 503, 504, a request that timed out, a
/// broken connection): through the Azure SDK's retry policy, with exponential backoff, and never for longer in total
/// than <see cref="MaxTotalTime"/> per device or checkpoint operation. Anything else, and a transient failure that
/// outlasts the bound, surfaces as an error (<see cref="Devices.StorageDeviceException"/> on the device).
/// </summary>
public sealed record AzureRetryOptions
{
    /// <summary>The most retries of one request, from 0 to 100. Default 10.</summary>
    public int MaxRetries { get; init; } = 10;

    /// <summary>The delay before the first retry; each next one doubles it (with jitter), up to
    /// <see cref="MaxDelay"/>. Greater than zero. Default 200 ms.</summary>
    public TimeSpan Delay { get; init; } = TimeSpan.FromMilliseconds(200);

    /// <summary>The longest delay between two tries, at least <see cref="Delay"/>. Default 8 s.</summary>
    public TimeSpan MaxDelay { get; init; } = TimeSpan.FromSeconds(8);

    /// <summary>
    /// How long one try may wait for the service before it counts as a timeout (and is retried). Greater than zero.
    /// Default 30 s: a Put Page of 4 MiB needs well under a second on a healthy connection.
    /// </summary>
    public TimeSpan NetworkTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// The longest one operation (a read or write of a device range, a checkpoint part, a manifest) may take with all
    /// its retries; then it fails with an error that says so. At least <see cref="NetworkTimeout"/>. Default 2 minutes.
    /// </summary>
    public TimeSpan MaxTotalTime { get; init; } = TimeSpan.FromMinutes(2);

    /// <summary>Checks every value, naming the first invalid one.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A value is out of its range.</exception>
    public void Validate()
    {
        if (MaxRetries is < 0 or > 100)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxRetries), MaxRetries, "MaxRetries must be from 0 to 100.");
        }

        if (Delay <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(Delay), Delay, "Delay must be greater than zero.");
        }

        if (MaxDelay < Delay)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxDelay), MaxDelay,
                $"MaxDelay must be at least Delay ({Delay}).");
        }

        if (NetworkTimeout <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(NetworkTimeout), NetworkTimeout,
                "NetworkTimeout must be greater than zero.");
        }

        if (MaxTotalTime < NetworkTimeout)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxTotalTime), MaxTotalTime,
                $"MaxTotalTime must be at least NetworkTimeout ({NetworkTimeout}).");
        }
    }

    /// <summary>Sets the retry settings of <paramref name="options"/> (the Azure SDK's pipeline) from these.</summary>
    internal void ApplyTo(BlobClientOptions options)
    {
        options.Retry.Mode = RetryMode.Exponential;
        options.Retry.MaxRetries = MaxRetries;
        options.Retry.Delay = Delay;
        options.Retry.MaxDelay = MaxDelay;
        options.Retry.NetworkTimeout = NetworkTimeout;
    }
}
