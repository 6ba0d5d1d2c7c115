namespace HybridKV.Azure;

/// <summary>
/// The writer lost its blob lease (it expired while renewals failed, or another writer broke it and took over), so it
/// stopped writing: every write from then on fails with this exception (wrapped in a
/// <see cref="Devices.StorageDeviceException"/> on the device). Dispose the store; a new one recovers from the blobs.
/// </summary>
public sealed class BlobLeaseLostException : IOException
{
    /// <summary>Creates the exception for a lost lease.</summary>
    /// <param name="container">The container's URI, without any query string.</param>
    /// <param name="leaseBlob">The blob whose lease was lost.</param>
    /// <param name="reason">How it was lost.</param>
    /// <param name="innerException">The failure that showed it.</param>
    public BlobLeaseLostException(string container, string leaseBlob, string reason, Exception? innerException = null)
        : base($"This writer lost its lease on '{leaseBlob}' in the blob container '{container}' ({reason}) and stopped " +
               "writing: another writer may own the blobs now. Dispose this store; open a new one to recover.",
               innerException)
    {
        Container = container;
        LeaseBlob = leaseBlob;
    }

    /// <summary>Creates the exception with a default message.</summary>
    public BlobLeaseLostException()
        : this("This writer lost its blob lease and stopped writing.")
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public BlobLeaseLostException(string message)
        : base(message)
    {
        Container = string.Empty;
        LeaseBlob = string.Empty;
    }

    /// <summary>Creates the exception with a message and the failure underneath.</summary>
    public BlobLeaseLostException(string message, Exception innerException)
        : base(message, innerException)
    {
        Container = string.Empty;
        LeaseBlob = string.Empty;
    }

    /// <summary>The container's URI, without any query string.</summary>
    public string Container { get; }

    /// <summary>The blob whose lease was lost.</summary>
    public string LeaseBlob { get; }
}
