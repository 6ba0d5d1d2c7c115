using System.Collections.Concurrent;
using System.Globalization;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace HybridKV.Devices;

/// <summary>
/// A device over local files, one per segment, read and written with positioned I/O (<see cref="RandomAccess"/>) on
/// dedicated I/O threads. Uses direct I/O (O_DIRECT) where the file system supports it; a new segment file's directory
/// entry is made durable (fsync of the directory) before the first write to it completes.
/// </summary>
public sealed class LocalFileDevice : StorageDevice, IoUring.IReadOwner
{
    private readonly LocalFileDeviceOptions _options;
    private readonly ConcurrentDictionary<long, SafeFileHandle> _files = new();
    private readonly ConcurrentDictionary<long, byte> _unflushed = new();
    private readonly object _createLock = new();
    private readonly IoThreadPool _io;
    private readonly IoUring? _ring;
    private readonly DirectoryLock _lock;

    /// <summary>Opens (or creates) a device in <see cref="LocalFileDeviceOptions.Directory"/>, and holds the directory
    /// until disposed: one device writes a directory at a time.</summary>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="DirectoryInUseException">Another device, in this process or another, holds the directory.</exception>
    public LocalFileDevice(LocalFileDeviceOptions options)
        : base(ValidOptions(options).SectorSize, options.SegmentSize, options.Capacity)
    {
        _options = options;
        DirectoryPath = Path.GetFullPath(options.Directory);
        Directory.CreateDirectory(DirectoryPath);
        _lock = DirectoryLock.Acquire(DirectoryPath);
        try
        {
            UsesDirectIo = options.UseDirectIo && DirectIoProbe.IsSupported(DirectoryPath, SectorSize);
            long[] existing = ExistingSegments();
            if (existing.Length > 0)
            {
                RestoreBeginAddress(existing[0] << SegmentSizeBits);
            }

            _io = new IoThreadPool(options.IoThreads, "HybridKV");
            _ring = options.UseIoUring ? IoUring.TryCreate(options.ReadQueueDepth, out _) : null;
        }
        catch
        {
            _io?.Dispose();
            _lock.Dispose();
            throw;
        }
    }

    /// <summary>The full path of the directory holding the segment files.</summary>
    public string DirectoryPath { get; }

    /// <summary>Whether writes and reads bypass the page cache (O_DIRECT).</summary>
    public bool UsesDirectIo { get; }

    /// <summary>The path of a segment's file.</summary>
    public string SegmentPath(long segment) =>
        Path.Combine(DirectoryPath, $"{_options.FilePrefix}.{segment.ToString(CultureInfo.InvariantCulture)}");

    /// <inheritdoc/>
    protected override ValueTask WriteSegmentAsync(
        long segment, long offset, ReadOnlyMemory<byte> source, CancellationToken cancellationToken)
    {
        SegmentWrite write = RentWrite();
        write.Set(segment, offset, source);
        _io.Run(write, first: true, cancellationToken);
        // Its version changes only once its result was taken: the task is the request's even if it completed already.
        return write.AsValueTask();
    }

    // Writes in flight come from here and go back once their result is taken: a page flush allocates nothing.
    private readonly Utilities.SpareObjects<SegmentWrite> _spareWrites = new();

    private SegmentWrite RentWrite() => _spareWrites.TryTake(out SegmentWrite? write) ? write : new SegmentWrite(this);

    private void WriteSegment(long segment, long offset, ReadOnlyMemory<byte> source)
    {
        SafeFileHandle file = OpenSegment(segment, create: true)!;
        try
        {
            WriteAligned(file, source.Span, offset);
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            throw new StorageDeviceException(
                $"Writing {source.Length} bytes at offset {offset} of '{SegmentPath(segment)}' failed.", error);
        }

        _unflushed.TryAdd(segment, 0);
    }

    /// <summary>A write of one segment's range on the I/O threads, reused.</summary>
    private sealed class SegmentWrite(LocalFileDevice device) : PooledIoRequest
    {
        private long _segment;
        private long _offset;
        private ReadOnlyMemory<byte> _source;

        public void Set(long segment, long offset, ReadOnlyMemory<byte> source) =>
            (_segment, _offset, _source) = (segment, offset, source);

        protected override void DoWork() => device.WriteSegment(_segment, _offset, _source);

        protected override void OnConsumed()
        {
            _source = default;
            device._spareWrites.TryKeep(this);
        }
    }

    /// <inheritdoc/>
    protected override ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken) =>
        ReadSegmentAsync(segment, offset, destination, completeInline: false, cancellationToken);

    /// <inheritdoc/>
    private protected override ValueTask ReadSegmentCompletingInlineAsync(long segment, long offset, Memory<byte> destination,
        CancellationToken cancellationToken) =>
        ReadSegmentAsync(segment, offset, destination, completeInline: true, cancellationToken);

    /// <inheritdoc/>
    internal override bool TryCompleteFinishedReads() => _ring?.TryTakeCompletions() ?? false;

    /// <inheritdoc/>
    internal override bool TakesFinishedReads => _ring is not null;

    private ValueTask ReadSegmentAsync(
        long segment, long offset, Memory<byte> destination, bool completeInline, CancellationToken cancellationToken)
    {
        if (_ring is not null)
        {
            // Pinned once: the ring reads into it, or (a misaligned buffer under direct I/O) the threads bounce it.
            System.Buffers.MemoryHandle pin = destination.Pin();
            if (!UsesDirectIo || IsSectorAligned(pin, destination.Length))
            {
                if (OpenSegment(segment, create: false) is not { } file)
                {
                    pin.Dispose();
                    destination.Span.Clear();
                    return default;
                }

                return _ring.ReadAsync(this, segment, file, pin, destination.Length, offset, completeInline,
                    cancellationToken);
            }

            pin.Dispose();
        }

        return ReadWithThreads(segment, offset, destination, cancellationToken);
    }

    /// <summary>Reads on the I/O threads (no io_uring, or a buffer direct I/O cannot use). Apart, so that its closure
    /// is made only here: a lambda in the method above was allocated at its start, on every read through the ring.</summary>
    private ValueTask ReadWithThreads(long segment, long offset, Memory<byte> destination, CancellationToken cancellationToken)
    {
        return _io.Run(() =>
        {
            SafeFileHandle? file = OpenSegment(segment, create: false);
            if (file is null)
            {
                destination.Span.Clear();
                return;
            }

            try
            {
                int read = ReadAligned(file, destination.Span, offset);
                destination.Span[read..].Clear();
            }
            catch (Exception error) when (error is IOException or UnauthorizedAccessException)
            {
                throw new StorageDeviceException(
                    $"Reading {destination.Length} bytes at offset {offset} of '{SegmentPath(segment)}' failed.", error);
            }
        }, cancellationToken);
    }

    /// <inheritdoc/>
    Exception IoUring.IReadOwner.ReadFailed(long segment, long offset, int length, int errno) =>
        new StorageDeviceException($"Reading {length} bytes at offset {offset} of '{SegmentPath(segment)}' failed.",
            new IOException($"io_uring read failed ({Libc.Describe(errno)}).", errno));

    private unsafe bool IsSectorAligned(System.Buffers.MemoryHandle pin, int length) =>
        ((nint)pin.Pointer & (SectorSize - 1)) == 0 && (length & (SectorSize - 1)) == 0;

    /// <summary>Whether reads go through io_uring (see <see cref="LocalFileDeviceOptions.UseIoUring"/>).</summary>
    public bool UsesIoUring => _ring is not null;

    /// <inheritdoc/>
    protected override ValueTask DeleteSegmentAsync(long segment, CancellationToken cancellationToken) =>
        DeleteSegmentsAsync(segment, segment + 1, cancellationToken);

    /// <inheritdoc/>
    /// <remarks>The directory is synced once for all of them: a sync per segment made a compaction's truncation of 14
    /// segments take 8-10 ms.</remarks>
    protected override ValueTask DeleteSegmentsAsync(long first, long until, CancellationToken cancellationToken)
    {
        return _io.Run(() =>
        {
            bool deleted = false;
            for (long segment = first; segment < until; segment++)
            {
                if (_files.TryRemove(segment, out SafeFileHandle? file))
                {
                    file.Dispose();
                }

                _unflushed.TryRemove(segment, out _);
                string path = SegmentPath(segment);
                if (File.Exists(path))
                {
                    File.Delete(path);
                    deleted = true;
                }
            }

            if (deleted)
            {
                SyncDirectory();
            }
        }, cancellationToken);
    }

    /// <inheritdoc/>
    protected override ValueTask FlushCoreAsync(CancellationToken cancellationToken)
    {
        return _io.Run(() =>
        {
            foreach (long segment in _unflushed.Keys)
            {
                // Removed before the flush: a write that completes meanwhile marks the segment again.
                _unflushed.TryRemove(segment, out _);
                if (_files.TryGetValue(segment, out SafeFileHandle? file))
                {
                    try
                    {
                        RandomAccess.FlushToDisk(file);
                    }
                    catch (IOException error)
                    {
                        _unflushed.TryAdd(segment, 0);
                        throw new StorageDeviceException($"fsync of '{SegmentPath(segment)}' failed.", error);
                    }
                }
            }
        }, cancellationToken, first: true);
    }

    /// <summary>Names the device by its directory, for messages.</summary>
    public override string ToString() => $"'{DirectoryPath}'";

    /// <inheritdoc/>
    public override string DescribeAddress(long address) =>
        $"'{SegmentPath(address >> SegmentSizeBits)}' at offset {address & (SegmentSize - 1)}";

    /// <summary>The path of the label file.</summary>
    public string LabelPath => Path.Combine(DirectoryPath, _options.FilePrefix + ".label");

    // The label and erasing are rare and small: they run on the caller's thread, not the I/O threads.

    /// <inheritdoc/>
    protected override ValueTask<byte[]?> ReadLabelCoreAsync(CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        try
        {
            return ValueTask.FromResult<byte[]?>(File.ReadAllBytes(LabelPath));
        }
        catch (FileNotFoundException) when (ExistingSegments().Length > 0)
        {
            throw new InvalidDataException(
                $"The log directory '{DirectoryPath}' holds segment files ({_options.FilePrefix}.N) but no label " +
                $"'{Path.GetFileName(LabelPath)}' saying which log they are: they were written by an older version of " +
                "HybridKV, or the label was removed. Move them away, or open the directory with the version that wrote " +
                "them.");
        }
        catch (FileNotFoundException)
        {
            return ValueTask.FromResult<byte[]?>(null);
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            throw new StorageDeviceException($"Reading the label '{LabelPath}' failed.", error);
        }
    }

    /// <inheritdoc/>
    protected override ValueTask WriteLabelCoreAsync(ReadOnlyMemory<byte> label, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        string temporary = LabelPath + ".tmp";
        try
        {
            using (var stream = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None))
            {
                stream.Write(label.Span);
                stream.Flush(flushToDisk: true);
            }

            File.Move(temporary, LabelPath, overwrite: true);
            SyncDirectory();
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            throw new StorageDeviceException($"Writing the label '{LabelPath}' failed.", error);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override ValueTask EraseCoreAsync(CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        try
        {
            foreach (long segment in ExistingSegments())
            {
                if (_files.TryRemove(segment, out SafeFileHandle? file))
                {
                    file.Dispose();
                }

                _unflushed.TryRemove(segment, out _);
                File.Delete(SegmentPath(segment));
            }

            File.Delete(LabelPath);
            SyncDirectory();
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            throw new StorageDeviceException($"Erasing the log in '{DirectoryPath}' failed.", error);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc/>
    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _ring?.Dispose();
            _io.Dispose();
            foreach (SafeFileHandle file in _files.Values)
            {
                file.Dispose();
            }

            _files.Clear();
            _lock.Dispose();
        }

        base.Dispose(disposing);
    }

    private static LocalFileDeviceOptions ValidOptions(LocalFileDeviceOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return options;
    }

    private long[] ExistingSegments()
    {
        string prefix = _options.FilePrefix + ".";
        return Directory.EnumerateFiles(DirectoryPath, prefix + "*")
            .Select(path => Path.GetFileName(path)[prefix.Length..])
            .Select(suffix => long.TryParse(suffix, NumberStyles.None, CultureInfo.InvariantCulture, out long n) ? n : -1)
            .Where(n => n >= 0)
            .Order()
            .ToArray();
    }

    private SafeFileHandle? OpenSegment(long segment, bool create)
    {
        if (_files.TryGetValue(segment, out SafeFileHandle? open))
        {
            return open;
        }

        string path = SegmentPath(segment);
        if (!create && !File.Exists(path))
        {
            return null;
        }

        lock (_createLock)
        {
            if (_files.TryGetValue(segment, out open))
            {
                return open;
            }

            bool isNew = !File.Exists(path);
            SafeFileHandle file = OpenFile(path);
            if (isNew)
            {
                if (_options.PreallocateSegments)
                {
                    Preallocate(file, path);
                }

                SyncDirectory();
            }

            _files[segment] = file;
            return file;
        }
    }

    private SafeFileHandle OpenFile(string path)
    {
        if (!UsesDirectIo)
        {
            return File.OpenHandle(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.ReadWrite | FileShare.Delete);
        }

        int fd = Libc.Open(path, Libc.ReadWrite | Libc.Create | Libc.CloseOnExec | Libc.Direct, Convert.ToInt32("644", 8));
        if (fd < 0)
        {
            throw new StorageDeviceException(
                $"Could not open '{path}' for direct I/O ({Libc.DescribeLastError()}).");
        }

        return new SafeFileHandle(fd, ownsHandle: true);
    }

    private void Preallocate(SafeFileHandle file, string path)
    {
        if (!OperatingSystem.IsLinux())
        {
            return;
        }

        int error = Libc.PosixFallocate((int)file.DangerousGetHandle(), 0, SegmentSize);
        if (error != 0)
        {
            throw new StorageDeviceException($"Could not preallocate {SegmentSize} bytes for '{path}' ({Libc.Describe(error)}).");
        }
    }

    private void SyncDirectory()
    {
        if (OperatingSystem.IsLinux())
        {
            Libc.FSyncDirectory(DirectoryPath);
        }
    }

    private unsafe void WriteAligned(SafeFileHandle file, ReadOnlySpan<byte> source, long offset)
    {
        fixed (byte* pointer = source)
        {
            if (!UsesDirectIo || ((nint)pointer & (SectorSize - 1)) == 0)
            {
                RandomAccess.Write(file, source, offset);
                return;
            }
        }

        // Direct I/O needs a sector-aligned buffer; the log's frames are, other callers' arrays may not be.
        using var bounce = new AlignedBuffer(source.Length, SectorSize);
        source.CopyTo(bounce.Span);
        RandomAccess.Write(file, bounce.Span, offset);
    }

    private unsafe int ReadAligned(SafeFileHandle file, Span<byte> destination, long offset)
    {
        fixed (byte* pointer = destination)
        {
            if (!UsesDirectIo || ((nint)pointer & (SectorSize - 1)) == 0)
            {
                return ReadFully(file, destination, offset);
            }
        }

        using var bounce = new AlignedBuffer(destination.Length, SectorSize);
        int read = ReadFully(file, bounce.Span, offset);
        bounce.Span[..read].CopyTo(destination);
        return read;
    }

    private static int ReadFully(SafeFileHandle file, Span<byte> destination, long offset)
    {
        int total = 0;
        while (total < destination.Length)
        {
            int read = RandomAccess.Read(file, destination[total..], offset + total);
            if (read == 0)
            {
                break;
            }

            total += read;
        }

        return total;
    }
}
