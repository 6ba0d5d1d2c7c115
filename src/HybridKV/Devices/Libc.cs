using System.Runtime.InteropServices;

namespace HybridKV.Devices;

/// <summary>
/// The few POSIX calls .NET does not expose: opening with O_DIRECT, fsync of a directory, and preallocation.
/// Linux only; callers check <see cref="OperatingSystem.IsLinux"/> first.
/// </summary>
internal static partial class Libc
{
    public const int ReadOnly = 0x0;
    public const int ReadWrite = 0x2;
    public const int Create = 0x40;
    public const int CloseOnExec = 0x80000;

    /// <summary>O_DIRECT, whose value differs between architectures.</summary>
    public static int Direct => RuntimeInformation.ProcessArchitecture switch
    {
        Architecture.Arm64 or Architecture.Arm => 0x10000,
        _ => 0x4000,
    };

    [LibraryImport("libc", EntryPoint = "open", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    public static partial int Open(string path, int flags, int mode);

    [LibraryImport("libc", EntryPoint = "close", SetLastError = true)]
    public static partial int Close(int fd);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    public static partial int FSync(int fd);

    /// <summary>Returns 0 or an errno value (it does not set errno).</summary>
    [LibraryImport("libc", EntryPoint = "posix_fallocate")]
    public static partial int PosixFallocate(int fd, long offset, long length);

    /// <summary>An errno as an error message shows it: the number and what the system calls it ("errno 2, No such file
    /// or directory"), so that an operator reading the message need not look the number up.</summary>
    public static string Describe(int errno) => $"errno {errno}, {Marshal.GetPInvokeErrorMessage(errno)}";

    /// <summary><see cref="Describe"/> of the last failed call's errno.</summary>
    public static string DescribeLastError() => Describe(Marshal.GetLastPInvokeError());

    /// <summary>Makes a directory entry change (a created or deleted file) durable.</summary>
    public static void FSyncDirectory(string directory)
    {
        int fd = Open(directory, ReadOnly | CloseOnExec, 0);
        if (fd < 0)
        {
            throw new StorageDeviceException(
                $"Could not open directory '{directory}' to fsync it ({DescribeLastError()}).");
        }

        try
        {
            if (FSync(fd) != 0)
            {
                throw new StorageDeviceException(
                    $"fsync of directory '{directory}' failed ({DescribeLastError()}).");
            }
        }
        finally
        {
            Close(fd);
        }
    }
}
