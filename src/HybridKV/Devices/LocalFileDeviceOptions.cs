namespace HybridKV.Devices;

/// <summary>Where and how a <see cref="LocalFileDevice"/> stores its segments.</summary>
public sealed record LocalFileDeviceOptions
{
    /// <summary>The directory that holds the segment files; created if missing. Required.</summary>
    public required string Directory { get; init; }

    /// <summary>The segment file names are <c>{FilePrefix}.{segment}</c>. Default "hlog".</summary>
    public string FilePrefix { get; init; } = "hlog";

    /// <summary>The size of one segment file: a power of two of at least one sector. Default 1 GiB.</summary>
    public long SegmentSize { get; init; } = 1L << 30;

    /// <summary>The I/O alignment: a power of two from 512 to 65536. Default 4096, which direct I/O accepts everywhere.</summary>
    public int SectorSize { get; init; } = 4096;

    /// <summary>
    /// Whether to bypass the page cache with O_DIRECT. The device probes the directory's file system and falls back to
    /// buffered I/O (made durable by <see cref="StorageDevice.FlushAsync"/>) where direct I/O is not supported.
    /// Default <see langword="true"/>.
    /// </summary>
    public bool UseDirectIo { get; init; } = true;

    /// <summary>Whether to reserve each segment's full size on disk when its file is created. Default false.</summary>
    public bool PreallocateSegments { get; init; }

    /// <summary>
    /// The number of dedicated I/O threads, from 1 to 64: they write (the log's flushes, fsync) and, without
    /// io_uring, also read. Default 2.
    /// </summary>
    public int IoThreads { get; init; } = 2;

    /// <summary>
    /// Whether reads go through Linux's io_uring, many in flight without a thread each (see
    /// <see cref="ReadQueueDepth"/>). Where the kernel has no io_uring or forbids it (some container sandboxes do),
    /// or off Linux, reads run on the I/O threads instead (<see cref="LocalFileDevice.UsesIoUring"/> tells which).
    /// Default <see langword="true"/>.
    /// </summary>
    public bool UseIoUring { get; init; } = true;

    /// <summary>How many reads may be in flight at once through io_uring, from 1 to 4096. Default 64.</summary>
    public int ReadQueueDepth { get; init; } = 64;

    /// <summary>The highest address (exclusive) the device accepts. Default unbounded.</summary>
    public long Capacity { get; init; } = long.MaxValue;

    /// <summary>Checks the options that the device's base class does not.</summary>
    public void Validate()
    {
        if (string.IsNullOrWhiteSpace(Directory))
        {
            throw new ArgumentException("A directory is required.", nameof(Directory));
        }

        if (string.IsNullOrWhiteSpace(FilePrefix) || FilePrefix.IndexOfAny(Path.GetInvalidFileNameChars()) >= 0)
        {
            throw new ArgumentException($"'{FilePrefix}' is not a valid file name prefix.", nameof(FilePrefix));
        }

        if (IoThreads < 1 || IoThreads > 64)
        {
            throw new ArgumentOutOfRangeException(nameof(IoThreads), IoThreads, "IoThreads must be from 1 to 64.");
        }

        if (ReadQueueDepth < 1 || ReadQueueDepth > 4096)
        {
            throw new ArgumentOutOfRangeException(nameof(ReadQueueDepth), ReadQueueDepth,
                "ReadQueueDepth must be from 1 to 4096.");
        }
    }
}
