namespace HybridKV.Azure;

/// <summary>
/// Another writer (another process, machine or silo) holds the blob lease of the log device or checkpoint store that
/// was being opened: two writers would overwrite each other's log or checkpoints, so the second is refused.
/// </summary>
public sealed class BlobStoreInUseException : IOException
{
    /// <summary>Creates the exception for a held lease.</summary>
    /// <param name="container">The container's URI, without any query string.</param>
    /// <param name="leaseBlob">The name of the blob whose lease is held.</param>
    /// <param name="holder">What the holder recorded about itself, or a note that it is unknown.</param>
    /// <param name="waited">How long the opener waited for the lease to be released or to expire.</param>
    /// <param name="innerException">The refused lease request.</param>
    public BlobStoreInUseException(string container, string leaseBlob, string holder, TimeSpan waited, Exception? innerException = null)
        : base($"The blob container '{container}' is in use by another writer ({holder}): the lease on '{leaseBlob}' " +
               $"is held, and it was neither released nor expired within {waited}. Two writers would overwrite each " +
               "other's blobs. Dispose the other writer first (the lease of a writer that died expires by itself after " +
               "its duration), wait longer (LeaseAcquireTimeout), or use another container or prefix.", innerException)
    {
        Container = container;
        LeaseBlob = leaseBlob;
        Holder = holder;
    }

    /// <summary>Creates the exception with a default message.</summary>
    public BlobStoreInUseException()
        : this("A blob container of the store is in use by another writer.")
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public BlobStoreInUseException(string message)
        : base(message)
    {
        Container = string.Empty;
        LeaseBlob = string.Empty;
        Holder = string.Empty;
    }

    /// <summary>Creates the exception with a message and the failure underneath.</summary>
    public BlobStoreInUseException(string message, Exception innerException)
        : base(message, innerException)
    {
        Container = string.Empty;
        LeaseBlob = string.Empty;
        Holder = string.Empty;
    }

    /// <summary>The container's URI, without any query string.</summary>
    public string Container { get; }

    /// <summary>The blob whose lease is held.</summary>
    public string LeaseBlob { get; }

    /// <summary>What the holder recorded about itself (process id, machine, since when), or a note that it is unknown.</summary>
    public string Holder { get; }
}
