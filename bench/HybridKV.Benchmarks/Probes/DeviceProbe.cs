using System.Diagnostics;
using System.Globalization;
using HybridKV.Devices;
using HybridKV.Sessions;

namespace HybridKV.Benchmarks.Probes;

/// <summary>
/// What the disk under a directory serves, and how much of it HybridKV's reads from storage get (issue 19, item 2):
/// random 4 KiB O_DIRECT reads of a file at queue depths 1, 16 and 64 through io_uring (the raw rate), then a store
/// of 1 KiB values whose log is many times its memory, read at random by as many sessions as the depth, each with one
/// read in flight (the pending-read rate). Prints <c>RESULT probe=randread depth=D iops=...</c> and
/// <c>RESULT store=hybridkv pending_read_ratio=R depth=D</c>.
/// </summary>
internal static class DeviceProbe
{
    private const int BlockBytes = 4096;
    private const int ValueBytes = 1000;

    public static int Run(string[] args)
    {
        string directory = CommandLine.Option(args, "--dir") ?? Path.Combine(Path.GetTempPath(), "hybridkv-probe");
        int[] depths = [.. (CommandLine.Option(args, "--depths") ?? "1,16,64").Split(',').Select(d => int.Parse(d, CultureInfo.InvariantCulture))];
        double seconds = double.Parse(CommandLine.Option(args, "--seconds") ?? "5", CultureInfo.InvariantCulture);
        long dataBytes = long.Parse(CommandLine.Option(args, "--data-mb") ?? "1024", CultureInfo.InvariantCulture) << 20;
        // --reads threads: the store reads on its I/O threads, as before io_uring (for comparison).
        bool ioUring = CommandLine.Option(args, "--reads") != "threads";
        if (Directory.Exists(directory))
        {
            Directory.Delete(directory, recursive: true);
        }

        Directory.CreateDirectory(directory);
        try
        {
            string file = Path.Combine(directory, "probe.data");
            WriteFile(file, dataBytes);
            var raw = new Dictionary<int, double>();
            foreach (int depth in depths)
            {
                raw[depth] = ProbeFile(file, dataBytes, depth, seconds);
                Console.WriteLine($"RESULT probe=randread depth={depth} iops={raw[depth]:F0}");
            }

            File.Delete(file);
            using var device = new LocalFileDevice(new LocalFileDeviceOptions
            {
                Directory = Path.Combine(directory, "store"),
                UseIoUring = ioUring,
            });
            Console.WriteLine($"store reads through {(device.UsesIoUring ? "io_uring" : "its I/O threads")}");
            using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(
                new StoreSettings
                {
                    LogDevice = device,
                    MemorySizeBytes = 32L << 20,
                    PageSizeBits = 22,
                    IndexBuckets = 1L << 20,
                    MaxSessions = Math.Max(128, depths.Max() + 8),
                    LogCompactionRatio = 0,
                });
            long keys = dataBytes / (ValueBytes + 32);
            Load(store, keys);
            foreach (int depth in depths)
            {
                double reads = ProbeStore(store, keys, depth, seconds);
                Console.WriteLine($"store=hybridkv depth={depth}: {reads:F0} pending reads/s " +
                                  $"({store.HeadAddress / (double)store.TailAddress:P0} of the log on the device)");
                Console.WriteLine($"RESULT store=hybridkv pending_read_ratio={reads / raw[depth]:F2} depth={depth}");
            }
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }

        return 0;
    }

    private static void WriteFile(string path, long bytes)
    {
        using var stream = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.None, 1 << 20);
        byte[] chunk = new byte[1 << 20];
        new Random(1).NextBytes(chunk);
        for (long written = 0; written < bytes; written += chunk.Length)
        {
            stream.Write(chunk);
        }

        stream.Flush(flushToDisk: true);
    }

    /// <summary>Random aligned 4 KiB reads, <paramref name="depth"/> in flight, through the device's own io_uring.</summary>
    private static double ProbeFile(string path, long bytes, int depth, double seconds)
    {
        using var ring = IoUring.TryCreate(depth, out string? whyNot)
            ?? throw new InvalidOperationException($"The probe needs io_uring: {whyNot}.");
        int fd = Libc.Open(path, Libc.ReadOnly | Libc.CloseOnExec | Libc.Direct, 0);
        using var file = new Microsoft.Win32.SafeHandles.SafeFileHandle(fd, ownsHandle: true);
        long blocks = bytes / BlockBytes;
        long completed = 0;
        var clock = Stopwatch.StartNew();
        var failures = new ProbeFailures();
        Task[] lanes = [.. Enumerable.Range(0, depth).Select(lane => Task.Run(async () =>
        {
            using var buffer = new AlignedBuffer(BlockBytes, BlockBytes);
            var random = new Random(lane);
            while (clock.Elapsed.TotalSeconds < seconds)
            {
                await ring.ReadAsync(failures, 0, file, buffer.Pin(), BlockBytes, random.NextInt64(blocks) * BlockBytes,
                    completeInline: false, CancellationToken.None).ConfigureAwait(false);
                Interlocked.Increment(ref completed);
            }
        }))];
        Task.WaitAll(lanes);
        return completed / clock.Elapsed.TotalSeconds;
    }

    /// <summary>A failed probe read is an error naming its errno.</summary>
    private sealed class ProbeFailures : IoUring.IReadOwner
    {
        public Exception ReadFailed(long segment, long offset, int length, int errno) =>
            new IOException($"A probe read of {length} bytes at {offset} failed with errno {errno}.");
    }

    private static void Load(HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> store, long keys)
    {
        var clock = Stopwatch.StartNew();
        using var session = store.NewSession();
        byte[] value = new byte[ValueBytes];
        new Random(2).NextBytes(value);
        Span<byte> key = stackalloc byte[sizeof(long)];
        for (long k = 0; k < keys; k++)
        {
            BitConverter.TryWriteBytes(key, k);
            session.Upsert(key, value);
        }

        Console.WriteLine($"loaded {keys:N0} keys of {ValueBytes} bytes in {clock.Elapsed.TotalSeconds:F1} s, " +
                          $"log {store.TailAddress >> 20} MiB, memory 32 MiB");
    }

    /// <summary>One session per unit of depth, each with one read of a random key in flight.</summary>
    private static double ProbeStore(
        HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> store, long keys,
        int depth, double seconds)
    {
        long completed = 0;
        long found = 0;
        long allocatedBefore = GC.GetTotalAllocatedBytes(precise: false);
        var clock = Stopwatch.StartNew();
        Task[] lanes = [.. Enumerable.Range(0, depth).Select(lane => Task.Run(async () =>
        {
            using Session<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> session = store.NewSession();
            var random = new Random(100 + lane);
            byte[] key = GC.AllocateArray<byte>(sizeof(long), pinned: true);
            while (clock.Elapsed.TotalSeconds < seconds)
            {
                BitConverter.TryWriteBytes(key, random.NextInt64(keys));
                (Status status, System.Buffers.IMemoryOwner<byte>? value) =
                    await session.ReadAsync(key.AsMemory()).ConfigureAwait(false);
                value?.Dispose();
                Interlocked.Increment(ref completed);
                if (status == Status.Ok)
                {
                    Interlocked.Increment(ref found);
                }
            }
        }))];
        Task.WaitAll(lanes);
        Console.WriteLine($"  {(GC.GetTotalAllocatedBytes(precise: false) - allocatedBefore) / (double)completed:F0} bytes " +
                          "allocated per read (the probe's own key and output handling included)");
        if (found != completed)
        {
            throw new InvalidOperationException($"Only {found} of {completed} reads found their key.");
        }

        return completed / clock.Elapsed.TotalSeconds;
    }
}
