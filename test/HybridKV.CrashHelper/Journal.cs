using System.Globalization;
using System.Text;
using HybridKV.Checkpoints;

namespace HybridKV.CrashHelper;

/// <summary>
/// Two append-only files that outlive a SIGKILL: every commit point recovered, and every commit point the store
/// reported as durable. Each append is one write of whole lines followed by fsync; a torn last line is ignored.
/// </summary>
internal sealed class Journal
{
    private readonly string _recoveries;
    private readonly string _commits;
    private readonly object _lock = new();

    public Journal(string directory)
    {
        Directory.CreateDirectory(directory);
        _recoveries = Path.Combine(directory, "recoveries.log");
        _commits = Path.Combine(directory, "commits.log");
    }

    public void AppendRecovery(CommitPoint[] points)
    {
        var text = new StringBuilder();
        for (int s = 0; s < points.Length; s++)
        {
            text.Append(CultureInfo.InvariantCulture,
                $"{s} {points[s].UntilSerialNo} {string.Join(',', points[s].ExcludedSerialNos)}\n");
        }

        Append(_recoveries, text.ToString());
    }

    public void AppendCommit(int session, CommitPoint point) =>
        Append(_commits, string.Create(CultureInfo.InvariantCulture, $"{session} {point.UntilSerialNo}\n"));

    /// <summary>The commit points recovered for <paramref name="session"/>, oldest first.</summary>
    public IEnumerable<CommitPoint> Recoveries(int session) =>
        Lines(_recoveries).Select(l => l.Split(' ')).Where(f => f.Length == 3 && Parse(f[0]) == session).Select(f =>
            new CommitPoint(Parse(f[1]), f[2].Length == 0 ? [] : f[2].Split(',').Select(Parse).ToArray()));

    /// <summary>The highest serial number the store ever said was durable for <paramref name="session"/>.</summary>
    public long HighestCommitTold(int session) =>
        Lines(_commits).Select(l => l.Split(' ')).Where(f => f.Length == 2 && Parse(f[0]) == session)
            .Select(f => Parse(f[1])).DefaultIfEmpty(0).Max();

    private void Append(string path, string lines)
    {
        lock (_lock)
        {
            using var file = new FileStream(path, FileMode.Append, FileAccess.Write, FileShare.ReadWrite);
            file.Write(Encoding.ASCII.GetBytes(lines));
            file.Flush(flushToDisk: true);
        }
    }

    private static string[] Lines(string path)
    {
        if (!File.Exists(path))
        {
            return [];
        }

        string text = File.ReadAllText(path);
        int end = text.LastIndexOf('\n');
        return end < 0 ? [] : text[..end].Split('\n');
    }

    private static long Parse(string text) => long.Parse(text, CultureInfo.InvariantCulture);
}
