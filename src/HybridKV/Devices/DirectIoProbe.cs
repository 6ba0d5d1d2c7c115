using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace HybridKV.Devices;

/// <summary>
/// Finds out whether a directory's file system accepts O_DIRECT (tmpfs, for one, does not) by writing one aligned
/// sector to a scratch file.
/// </summary>
internal static class DirectIoProbe
{
    public static bool IsSupported(string directory, int sectorSize)
    {
        if (!OperatingSystem.IsLinux())
        {
            return false;
        }

        string path = Path.Combine(directory, $".direct-io-probe-{Environment.ProcessId}-{Guid.NewGuid():N}");
        int fd = Libc.Open(path, Libc.ReadWrite | Libc.Create | Libc.CloseOnExec | Libc.Direct, Convert.ToInt32("600", 8));
        if (fd < 0)
        {
            // The file may have been created before the flag was refused.
            File.Delete(path);
            return false;
        }

        try
        {
            using var file = new SafeFileHandle(fd, ownsHandle: true);
            using var buffer = new AlignedBuffer(sectorSize, sectorSize);
            RandomAccess.Write(file, buffer.Span, 0);
            return true;
        }
        catch (IOException)
        {
            return false;
        }
        finally
        {
            File.Delete(path);
        }
    }
}
