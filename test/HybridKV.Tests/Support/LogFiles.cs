namespace HybridKV.Tests.Support;

/// <summary>The files a local log device keeps in its directory.</summary>
internal static class LogFiles
{
    /// <summary>The numbers of the segment files (<c>hlog.N</c>; not the label) in a log directory.</summary>
    public static long[] SegmentNumbers(string logDirectory) =>
        Directory.GetFiles(logDirectory, "hlog.*")
            .Select(path => long.TryParse(Path.GetExtension(path).TrimStart('.'), out long n) ? n : -1)
            .Where(n => n >= 0)
            .ToArray();
}
