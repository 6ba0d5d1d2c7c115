namespace HybridKV.Benchmarks;

/// <summary>The runners' command-line options of the form <c>--name value</c>.</summary>
internal static class CommandLine
{
    /// <summary>The value after <paramref name="name"/> in <paramref name="args"/>, or null if it is not there.</summary>
    public static string? Option(string[] args, string name)
    {
        int index = Array.IndexOf(args, name);
        return index >= 0 && index + 1 < args.Length ? args[index + 1] : null;
    }
}
