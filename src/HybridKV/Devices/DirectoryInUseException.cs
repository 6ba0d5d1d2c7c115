namespace HybridKV.Devices;

/// <summary>
/// A directory that a store (its log device or its checkpoint store) uses is held by another one, in this process or
/// another: two writers would overwrite each other's log or checkpoints.
/// </summary>
public sealed class DirectoryInUseException : IOException
{
    /// <summary>Creates the exception for a held directory.</summary>
    /// <param name="directory">The directory's full path.</param>
    /// <param name="holder">What the holder wrote about itself (process id, machine, since when), or a note that it is
    /// unknown.</param>
    /// <param name="innerException">The failure to take the lock.</param>
    public DirectoryInUseException(string directory, string holder, Exception? innerException = null)
        : base($"The directory '{directory}' is in use by another store ({holder}): its lock file " +
               $"'{Path.Combine(directory, DirectoryLock.LockFileName)}' is held. Two stores on one directory would " +
               "overwrite each other's files. Dispose the other store first (a process that ends releases the lock by " +
               "itself), or use another directory.", innerException)
    {
        Directory = directory;
        Holder = holder;
    }

    /// <summary>Creates the exception with a default message.</summary>
    public DirectoryInUseException()
        : base("A directory of the store is in use by another store.")
    {
        Directory = string.Empty;
        Holder = string.Empty;
    }

    /// <summary>Creates the exception with a message.</summary>
    public DirectoryInUseException(string message)
        : base(message)
    {
        Directory = string.Empty;
        Holder = string.Empty;
    }

    /// <summary>Creates the exception with a message and the failure underneath.</summary>
    public DirectoryInUseException(string message, Exception innerException)
        : base(message, innerException)
    {
        Directory = string.Empty;
        Holder = string.Empty;
    }

    /// <summary>The directory's full path.</summary>
    public string Directory { get; }

    /// <summary>What the holder recorded about itself.</summary>
    public string Holder { get; }
}
