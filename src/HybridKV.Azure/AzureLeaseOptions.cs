namespace HybridKV.Azure;

/// <summary>The blob lease that gives a log device or checkpoint store one writer.</summary>
public sealed record AzureLeaseOptions
{
    /// <summary>The lease's duration, from 15 to 60 seconds (the service's range). It is renewed every third of it;
    /// a writer that dies holds the container for at most this long. Default 30 s.</summary>
    public TimeSpan Duration { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long opening waits for a lease held by another writer to be released or to expire before it fails with
    /// <see cref="BlobStoreInUseException"/>: zero fails at once. At least zero. Default 45 s, so that a process
    /// restarted after a crash gets the lease its previous run left behind.
    /// </summary>
    public TimeSpan AcquireTimeout { get; init; } = TimeSpan.FromSeconds(45);

    /// <summary>Checks every value, naming the first invalid one.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A value is out of its range.</exception>
    public void Validate()
    {
        if (Duration < TimeSpan.FromSeconds(15) || Duration > TimeSpan.FromSeconds(60))
        {
            throw new ArgumentOutOfRangeException(nameof(Duration), Duration,
                "The lease duration must be from 15 to 60 seconds.");
        }

        if (AcquireTimeout < TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(AcquireTimeout), AcquireTimeout,
                "AcquireTimeout must be zero or more.");
        }
    }
}
