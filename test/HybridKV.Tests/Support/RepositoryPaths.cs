namespace HybridKV.Tests.Support;

/// <summary>
/// The repository the tests were built from, found from the test binaries (compile-time paths are not usable: CI
/// builds are deterministic, which maps source paths to "/_/").
/// </summary>
internal static class RepositoryPaths
{
    public static string Root { get; } = FindRoot();

    private static string FindRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Store.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Store.sln above {AppContext.BaseDirectory}.");
    }
}
