using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Devices;

[Trait("Category", "Device")]
[Collection(nameof(ProcessWideTests))]
public sealed class LocalFileDeviceTests : IDisposable
{
    private const int Sector = 4096;
    private const long Segment = 64 * 1024;
    private readonly TempDirectory _directory = new();

    private static LocalFileDeviceOptions Options(string directory, bool direct = true) => new()
    {
        Directory = directory,
        SectorSize = Sector,
        SegmentSize = Segment,
        UseDirectIo = direct,
    };

    public void Dispose() => _directory.Dispose();

    /// <summary>Reads waiting for a free io_uring slot when the device is disposed fail; none waits for ever.</summary>
    [Fact]
    public async Task Disposing_the_device_fails_the_reads_waiting_for_a_slot_instead_of_leaving_them_waiting()
    {
        var device = new LocalFileDevice(Options(_directory.NewSubdirectory()) with { ReadQueueDepth = 1 });
        await device.WriteAsync(0, Bytes(4 * (int)Segment, 3));
        var buffers = Enumerable.Range(0, 5_000).Select(_ => new AlignedBuffer(Sector, Sector)).ToArray();
        Task[] reads = [.. buffers.Select((buffer, i) => device.ReadAsync((long)(i % 64) * Sector, buffer.Memory).AsTask())];
        device.Dispose();
        try
        {
            // A read left waiting fails this with a TimeoutException; those the disposal failed end here.
            await Task.WhenAll(reads).WaitAsync(TimeSpan.FromMinutes(1));
        }
        catch (ObjectDisposedException)
        {
        }

        Assert.All(reads, read => Assert.True(read.IsCompletedSuccessfully ||
            read.Exception?.InnerException is ObjectDisposedException, $"{read.Status}: {read.Exception?.InnerException}"));
        foreach (AlignedBuffer buffer in buffers)
        {
            ((IDisposable)buffer).Dispose();
        }
    }

    /// <summary>
    /// A segment that cannot be created (its directory was deleted under the running device) fails the write with an
    /// error naming the file and what the system said, not a bare errno an operator must look up.
    /// </summary>
    [Fact]
    public async Task A_write_whose_segment_cannot_be_created_names_the_file_and_the_systems_reason()
    {
        string directory = _directory.NewSubdirectory();
        using var device = new LocalFileDevice(Options(directory));
        await device.WriteAsync(0, Bytes(Sector, 1));
        Directory.Delete(directory, recursive: true);

        var error = await Assert.ThrowsAsync<StorageDeviceException>(
            async () => await device.WriteAsync(Segment, Bytes(Sector, 2)));
        string message = error.ToString();
        Assert.Contains(device.SegmentPath(1), message, StringComparison.Ordinal);
        Assert.Contains(System.Runtime.InteropServices.Marshal.GetPInvokeErrorMessage(2), message, StringComparison.Ordinal);
    }

    /// <summary>
    /// The submission ring has room for every read the depth lets into the kernel and the stop. Reads a completion lets
    /// in wait in the ring for the reaper's next wait; sized for the depth alone, the stop of a device closed in that
    /// moment was written over such a read (a ring of depth 1 has one entry), which never completed, and closing waited
    /// for it for ever (seen in CI, in the test above).
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    [InlineData(64)]
    public void The_submission_ring_holds_every_read_of_the_depth_and_the_stop(int depth)
    {
        using IoUring? ring = IoUring.TryCreate(depth, out string? whyNot);
        Assert.True(IoUringSupport.Available == ring is not null, whyNot);
        if (ring is not null)
        {
            Assert.True(ring.SubmissionEntries >= depth + 1, $"{ring.SubmissionEntries} entries for depth {depth}");
        }
    }

    /// <summary>Devices of depth 1 closed again and again while reads go in and complete: every close returns and
    /// every read ends, done or failed as disposed.</summary>
    [Fact]
    public async Task A_device_closed_while_its_reads_go_in_closes_every_time()
    {
        string directory = _directory.NewSubdirectory();
        using (var writer = new LocalFileDevice(Options(directory)))
        {
            await writer.WriteAsync(0, Bytes((int)Segment, 5));
        }

        using var buffer = new AlignedBuffer(Sector, Sector);
        for (int round = 0; round < 100 * TestScale.Factor; round++)
        {
            var device = new LocalFileDevice(Options(directory) with { ReadQueueDepth = 1 });
            Task[] reads = [.. Enumerable.Range(0, 8).Select(i => device.ReadAsync((long)i * Sector, buffer.Memory).AsTask())];
            await Task.Run(device.Dispose).WaitAsync(TimeSpan.FromMinutes(1));
            await Task.WhenAll(reads).ContinueWith(_ => { }, TaskScheduler.Default).WaitAsync(TimeSpan.FromMinutes(1));
            Assert.All(reads, read => Assert.True(read.IsCompletedSuccessfully ||
                read.Exception?.InnerException is ObjectDisposedException, $"{read.Status}: {read.Exception?.InnerException}"));
        }
    }

    /// <summary>
    /// Reads from several threads at once, many more than the io_uring depth, each checked, then disposal: it returns
    /// once the reads in flight are done (a miscounted in-flight total kept the reaper thread waiting forever).
    /// </summary>
    [Theory]
    [InlineData(4)]
    [InlineData(64)]
    public async Task Thousands_of_concurrent_reads_through_io_uring_return_the_bytes_written_and_the_device_closes(int depth)
    {
        byte[] data = Bytes(4 * (int)Segment, 9);
        var device = new LocalFileDevice(Options(_directory.NewSubdirectory()) with { ReadQueueDepth = depth });
        Assert.Equal(IoUringSupport.Available, device.UsesIoUring);
        await device.WriteAsync(0, data);
        int sectors = data.Length / Sector;
        Task[] readers = [.. Enumerable.Range(0, 4).Select(thread => Task.Run(async () =>
        {
            using var buffer = new AlignedBuffer(Sector, Sector);
            var random = new Random(thread);
            for (int i = 0; i < 25_000; i++)
            {
                int sector = random.Next(sectors);
                await device.ReadAsync((long)sector * Sector, buffer.Memory);
                Assert.True(buffer.Span.SequenceEqual(data.AsSpan(sector * Sector, Sector)), $"sector {sector}");
            }
        }))];
        await Task.WhenAll(readers).WaitAsync(TimeSpan.FromMinutes(2));
        await Task.Run(device.Dispose).WaitAsync(TimeSpan.FromMinutes(1));
    }

    /// <summary>
    /// Threads that take finished reads from the ring themselves (as a session about to wait for its reads does), beside
    /// the reaper thread and each other: every read completes once with its own bytes, and the device closes while
    /// they are still taking, without waiting for ever (a stop taken from the reaper) or touching the unmapped ring.
    /// </summary>
    [Fact]
    public async Task Reads_completed_by_the_threads_waiting_for_them_return_their_bytes_and_the_device_closes_meanwhile()
    {
        byte[] data = Bytes(4 * (int)Segment, 4);
        var device = new LocalFileDevice(Options(_directory.NewSubdirectory()) with { ReadQueueDepth = 8 });
        await device.WriteAsync(0, data);
        int sectors = data.Length / Sector;
        long takenByReaders = 0;
        Task[] readers = [.. Enumerable.Range(0, 3).Select(thread => Task.Run(() =>
        {
            var buffers = Enumerable.Range(0, 16).Select(_ => new AlignedBuffer(Sector, Sector)).ToArray();
            var random = new Random(thread);
            for (int round = 0; round < 2_000; round++)
            {
                int[] wanted = [.. buffers.Select(_ => random.Next(sectors))];
                Task[] reads = [.. buffers.Select((buffer, i) => device.ReadAsync((long)wanted[i] * Sector, buffer.Memory).AsTask())];
                while (!reads.All(read => read.IsCompleted))
                {
                    if (device.TryCompleteFinishedReads())
                    {
                        Interlocked.Increment(ref takenByReaders);
                    }
                }

                for (int i = 0; i < buffers.Length; i++)
                {
                    reads[i].GetAwaiter().GetResult();
                    Assert.True(buffers[i].Span.SequenceEqual(data.AsSpan(wanted[i] * Sector, Sector)), $"sector {wanted[i]}");
                }
            }

            foreach (AlignedBuffer buffer in buffers)
            {
                ((IDisposable)buffer).Dispose();
            }
        }))];
        await Task.WhenAll(readers).WaitAsync(TimeSpan.FromMinutes(2));
        Assert.Equal(IoUringSupport.Available, Interlocked.Read(ref takenByReaders) > 0);

        // Takers still at it while the device closes, with reads in flight.
        using var stop = new CancellationTokenSource();
        Task[] takers = [.. Enumerable.Range(0, 2).Select(_ => Task.Run(() =>
        {
            while (!stop.IsCancellationRequested)
            {
                device.TryCompleteFinishedReads();
            }
        }))];
        var inFlight = Enumerable.Range(0, 64).Select(_ => new AlignedBuffer(Sector, Sector)).ToArray();
        Task[] last = [.. inFlight.Select((buffer, i) => device.ReadAsync((long)(i % sectors) * Sector, buffer.Memory).AsTask())];
        await Task.Run(device.Dispose).WaitAsync(TimeSpan.FromMinutes(1));
        await stop.CancelAsync();
        await Task.WhenAll(takers).WaitAsync(TimeSpan.FromMinutes(1));
        await Task.WhenAll(last.Select(read => read.ContinueWith(_ => { }, TaskScheduler.Default))).WaitAsync(TimeSpan.FromMinutes(1));
        Assert.All(last, read => Assert.True(read.IsCompletedSuccessfully ||
            read.Exception?.InnerException is ObjectDisposedException, $"{read.Status}: {read.Exception?.InnerException}"));
        foreach (AlignedBuffer buffer in inFlight)
        {
            ((IDisposable)buffer).Dispose();
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_reopened_device_reads_back_what_was_written_and_keeps_its_begin_address(bool direct)
    {
        string directory = _directory.NewSubdirectory();
        byte[] data = Bytes(3 * (int)Segment, 5);
        using (var device = new LocalFileDevice(Options(directory, direct)))
        {
            await device.WriteAsync(0, data);
            await device.FlushAsync();
            await device.TruncateUntilAsync(Segment);
        }

        using var reopened = new LocalFileDevice(Options(directory, direct));
        Assert.Equal(Segment, reopened.BeginAddress);
        byte[] back = new byte[2 * (int)Segment];
        await reopened.ReadAsync(Segment, back);
        Assert.Equal(data[(int)Segment..], back);
    }

    [Fact]
    public async Task Segments_are_files_named_after_their_number_and_can_be_preallocated()
    {
        string directory = _directory.NewSubdirectory();
        using var device = new LocalFileDevice(Options(directory) with { PreallocateSegments = true, FilePrefix = "log" });
        await device.WriteAsync(2 * Segment, Bytes(Sector, 1));
        string path = Path.Combine(directory, "log.2");
        Assert.Equal(path, device.SegmentPath(2));
        Assert.True(File.Exists(path));
        Assert.Equal(Segment, new FileInfo(path).Length);
        Assert.Single(Directory.GetFiles(directory, "log.*"));
    }

    [Fact]
    public async Task Buffers_that_are_not_sector_aligned_still_work_with_direct_io()
    {
        using var device = new LocalFileDevice(Options(_directory.NewSubdirectory()));
        byte[] backing = new byte[2 * Sector + 1];
        Memory<byte> misaligned = backing.AsMemory(1, 2 * Sector);
        Bytes(2 * Sector, 9).CopyTo(misaligned);
        await device.WriteAsync(Sector, misaligned);

        byte[] readBacking = new byte[2 * Sector + 3];
        Memory<byte> readInto = readBacking.AsMemory(3, 2 * Sector);
        await device.ReadAsync(Sector, readInto);
        Assert.Equal(misaligned.ToArray(), readInto.ToArray());
    }

    [Fact]
    public async Task Dispose_releases_every_file_handle()
    {
        if (!Directory.Exists("/proc/self/fd"))
        {
            Assert.Fail("This test counts /proc/self/fd, which this platform does not have.");
        }

        int before = Directory.GetFiles("/proc/self/fd").Length;
        var device = new LocalFileDevice(Options(_directory.NewSubdirectory()));
        for (int segment = 0; segment < 8; segment++)
        {
            await device.WriteAsync(segment * Segment, Bytes(Sector, (byte)segment));
        }

        Assert.True(Directory.GetFiles("/proc/self/fd").Length >= before + 8);
        device.Dispose();
        Assert.True(Directory.GetFiles("/proc/self/fd").Length <= before,
            $"{Directory.GetFiles("/proc/self/fd").Length} descriptors open after dispose, {before} before");
    }

    [Fact]
    public void Invalid_options_are_rejected_with_the_option_named()
    {
        Assert.Equal("Directory", Assert.Throws<ArgumentException>(
            () => new LocalFileDevice(new LocalFileDeviceOptions { Directory = " " })).ParamName);
        Assert.Equal("IoThreads", Assert.Throws<ArgumentOutOfRangeException>(
            () => new LocalFileDevice(Options(_directory.Path) with { IoThreads = 0 })).ParamName);
        Assert.Equal("segmentSize", Assert.Throws<ArgumentOutOfRangeException>(
            () => new LocalFileDevice(Options(_directory.Path) with { SegmentSize = 3 * Sector })).ParamName);
        Assert.Equal("sectorSize", Assert.Throws<ArgumentOutOfRangeException>(
            () => new LocalFileDevice(Options(_directory.Path) with { SectorSize = 1000 })).ParamName);
    }

    private static byte[] Bytes(int length, byte seed)
    {
        byte[] data = new byte[length];
        new Random(seed).NextBytes(data);
        return data;
    }
}

[Trait("Category", "Device")]
public sealed class FaultInjectingDeviceTests
{
    private const int Sector = 512;

    private static FaultInjectingDevice Create() => new(new MemoryDevice(Sector, 16 * Sector));

    [Fact]
    public async Task An_injected_write_error_surfaces_and_writes_nothing()
    {
        using var device = Create();
        device.FailWrite = request => request.Sequence == 1;
        await device.WriteAsync(0, Filled(Sector, 1));
        var error = await Assert.ThrowsAsync<StorageDeviceException>(
            async () => await device.WriteAsync(Sector, Filled(Sector, 2)));
        Assert.Contains("address 512", error.Message, StringComparison.Ordinal);

        byte[] back = new byte[2 * Sector];
        await device.ReadAsync(0, back);
        Assert.All(back[..Sector], b => Assert.Equal(1, b));
        Assert.All(back[Sector..], b => Assert.Equal(0, b));
    }

    [Fact]
    public async Task An_injected_read_error_surfaces()
    {
        using var device = Create();
        await device.WriteAsync(0, Filled(Sector, 1));
        device.FailRead = request => request.Address == 0;
        await Assert.ThrowsAsync<StorageDeviceException>(async () => await device.ReadAsync(0, new byte[Sector]));
        Assert.Equal(1, device.ReadCount);
    }

    [Fact]
    public async Task A_torn_write_lands_only_its_leading_sectors()
    {
        using var device = Create();
        device.TearWrite = _ => 2;
        await Assert.ThrowsAsync<StorageDeviceException>(async () => await device.WriteAsync(0, Filled(4 * Sector, 7)));

        device.TearWrite = null;
        byte[] back = new byte[4 * Sector];
        await device.ReadAsync(0, back);
        Assert.All(back[..(2 * Sector)], b => Assert.Equal(7, b));
        Assert.All(back[(2 * Sector)..], b => Assert.Equal(0, b));
    }

    [Fact]
    public async Task Added_latency_holds_a_request_back_until_it_is_canceled()
    {
        using var device = Create();
        device.Latency = TimeSpan.FromMinutes(10);
        using var cancel = new CancellationTokenSource();
        ValueTask write = device.WriteAsync(0, Filled(Sector, 1), cancel.Token);
        Assert.False(write.IsCompleted);
        await cancel.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await write);
    }

    private static byte[] Filled(int length, byte value) => Enumerable.Repeat(value, length).ToArray();
}
