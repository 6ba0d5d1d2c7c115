namespace HybridKV.Devices;

/// <summary>A storage device failed to read, write, flush or delete; the message names the device and the range.</summary>
public sealed class StorageDeviceException : IOException
{
    /// <summary>Creates the exception with a message.</summary>
    public StorageDeviceException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the failure underneath.</summary>
    public StorageDeviceException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates the exception with a default message.</summary>
    public StorageDeviceException()
        : base("The storage device failed.")
    {
    }
}
