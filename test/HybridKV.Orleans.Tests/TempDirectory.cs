namespace HybridKV.Orleans.Tests;

/// <summary>A directory on the real disk (beside the test binaries), removed afterwards.</summary>
public sealed class TempDirectory : IDisposable
{
    public string Path { get; } = Directory.CreateDirectory(System.IO.Path.Combine(
        AppContext.BaseDirectory, "test-data", Guid.NewGuid().ToString("N"))).FullName;

    public void Dispose()
    {
        if (Directory.Exists(Path))
        {
            Directory.Delete(Path, recursive: true);
        }
    }
}
