namespace HybridKV.Extensions.Hosting.Tests.Support;

/// <summary>A directory on the real disk (beside the test binaries), removed afterwards.</summary>
public sealed class TempDirectory : IDisposable
{
    public string Path { get; } = Directory.CreateDirectory(System.IO.Path.Combine(
        AppContext.BaseDirectory, "test-data", Guid.NewGuid().ToString("N"))).FullName;

    public string NewSubdirectory() =>
        Directory.CreateDirectory(System.IO.Path.Combine(Path, Guid.NewGuid().ToString("N"))).FullName;

    /// <summary>A copy of everything under <paramref name="source"/> as it is on disk now: what a crash would leave.</summary>
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
