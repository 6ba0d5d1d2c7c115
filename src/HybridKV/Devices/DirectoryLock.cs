using System.Diagnostics;
using System.Globalization;

namespace HybridKV.Devices;

/// <summary>
/// One writer per directory: an exclusive operating-system lock on <c>{directory}/LOCK</c> (on Linux an
/// <c>flock</c>, which .NET takes for <see cref="FileShare.None"/>), held until disposed. The operating system drops it
/// when the process ends, so a crash never leaves the directory locked. The holder describes itself in
/// <c>LOCK.holder</c>, so that the next one can be told who it is.
/// </summary>
internal sealed class DirectoryLock : IDisposable
{
    public const string LockFileName = "LOCK";
    private const string HolderFileName = "LOCK.holder";

    private readonly FileStream _lock;

    private DirectoryLock(FileStream held) => _lock = held;

    /// <summary>Takes the lock of <paramref name="directory"/> (which exists), or throws.</summary>
    /// <exception cref="DirectoryInUseException">Another store holds it.</exception>
    public static DirectoryLock Acquire(string directory)
    {
        string path = Path.Combine(directory, LockFileName);
        FileStream held;
        try
        {
            held = new FileStream(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None, bufferSize: 1);
        }
        catch (IOException error) when (error is not FileNotFoundException and not DirectoryNotFoundException)
        {
            throw new DirectoryInUseException(directory, DescribeHolder(directory), error);
        }

        try
        {
            using Process self = Process.GetCurrentProcess();
            File.WriteAllText(Path.Combine(directory, HolderFileName), string.Create(CultureInfo.InvariantCulture,
                $"process {Environment.ProcessId} ({self.ProcessName}) on {Environment.MachineName}, since {DateTimeOffset.UtcNow:u}"));
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            // The description only helps the next holder's message; the lock itself is what counts.
            Debug.WriteLine($"HybridKV could not describe the holder of '{path}': {error.Message}");
        }

        return new DirectoryLock(held);
    }

    private static string DescribeHolder(string directory)
    {
        try
        {
            return "held by " + File.ReadAllText(Path.Combine(directory, HolderFileName));
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            return "holder unknown";
        }
    }

    public void Dispose() => _lock.Dispose();
}
