namespace HybridKV.Tests.Support;

/// <summary>A directory on the real disk (beside the test binaries, not a RAM file system), removed afterwards.</summary>
public sealed class TempDirectory : IDisposable
{
    public TempDirectory()
    {
        Path = System.IO.Path.Combine(AppContext.BaseDirectory, "test-data", Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(Path);
    }

    public string Path { get; }

    public string NewSubdirectory() => Directory.CreateDirectory(
        System.IO.Path.Combine(Path, Guid.NewGuid().ToString("N"))).FullName;

    /// <summary>A copy of <paramref name="source"/> and everything under it as it is on disk now, in a new
    /// subdirectory: what a crash would leave (the lock file of a running store excepted).</summary>
    public string CopyOf(string source)
    {
        string target = NewSubdirectory();
        foreach (string file in Directory.GetFiles(source, "*", SearchOption.AllDirectories))
        {
            if (System.IO.Path.GetFileName(file) == "LOCK")
            {
                // Held by the running store; the operating system would have dropped it in a crash.
                continue;
            }

            string destination = System.IO.Path.Combine(target, System.IO.Path.GetRelativePath(source, file));
            Directory.CreateDirectory(System.IO.Path.GetDirectoryName(destination)!);
            File.Copy(file, destination);
        }

        return target;
    }

    public void Dispose()
    {
        if (Directory.Exists(Path))
        {
            Directory.Delete(Path, recursive: true);
        }
    }
}
