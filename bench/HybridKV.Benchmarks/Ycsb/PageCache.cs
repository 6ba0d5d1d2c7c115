using System.Globalization;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace HybridKV.Benchmarks.Ycsb;

/// <summary>
/// How much of a store's files the operating system's page cache holds (Linux <c>mincore</c> over a mapping of each
/// file): memory a store that reads through the page cache uses beyond its own budget.
/// </summary>
public static partial class PageCache
{
    private const int ProtRead = 1;
    private const int MapShared = 1;

    /// <summary>"page cache N MiB of M MiB" for the files named <paramref name="prefix"/>.*, or a note why not.</summary>
    public static string Describe(string prefix)
    {
        if (!OperatingSystem.IsLinux())
        {
            return "page cache not measured (Linux only)";
        }

        long cached = 0;
        long size = 0;
        try
        {
            string directory = Path.GetDirectoryName(prefix)!;
            foreach (string file in Directory.EnumerateFiles(directory, Path.GetFileName(prefix) + ".*"))
            {
                (long fileCached, long fileSize) = Resident(file);
                cached += fileCached;
                size += fileSize;
            }
        }
        catch (IOException)
        {
            return "page cache not measured";
        }

        return string.Create(CultureInfo.InvariantCulture,
            $"page cache holds {cached >> 20} MiB of its {size >> 20} MiB of files");
    }

    private static unsafe (long Cached, long Size) Resident(string path)
    {
        using SafeFileHandle file = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
        long size = RandomAccess.GetLength(file);
        if (size == 0)
        {
            return (0, 0);
        }

        nint map = Mmap(0, (nuint)size, ProtRead, MapShared, (int)file.DangerousGetHandle(), 0);
        if (map == -1)
        {
            return (0, size);
        }

        try
        {
            long pageSize = Environment.SystemPageSize;
            long pages = (size + pageSize - 1) / pageSize;
            byte[] vector = new byte[pages];
            fixed (byte* v = vector)
            {
                if (Mincore(map, (nuint)size, v) != 0)
                {
                    return (0, size);
                }
            }

            long resident = 0;
            foreach (byte page in vector)
            {
                resident += page & 1;
            }

            return (resident * pageSize, size);
        }
        finally
        {
            _ = Munmap(map, (nuint)size);
        }
    }

    [LibraryImport("libc", EntryPoint = "mmap")]
    private static partial nint Mmap(nint address, nuint length, int protection, int flags, int fd, long offset);

    [LibraryImport("libc", EntryPoint = "munmap")]
    private static partial int Munmap(nint address, nuint length);

    [LibraryImport("libc", EntryPoint = "mincore")]
    private static unsafe partial int Mincore(nint address, nuint length, byte* vector);
}
