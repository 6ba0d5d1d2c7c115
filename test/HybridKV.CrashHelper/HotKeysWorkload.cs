using System.Globalization;
using CountStore;
using HybridKV.Checkpoints;

namespace HybridKV.CrashHelper;

/// <summary>
/// The crash workload for the order of a session's pending operations: each session sends every other operation to
/// one of four hot keys (RMW, upsert or delete, chosen by the serial number) and the rest upserts a wide range of
/// filler keys, which keeps the hot keys' records on the device; so hot operations go pending and pile up behind
/// each other. The expected value of every key is that of the surviving operations applied in serial order.
/// </summary>
internal static class HotKeysWorkload
{
    private const int Sessions = Program.Sessions;
    private const int HotKeys = 4;
    private const int FillerKeys = 2000;
    private const long FillerBase = 100;

    public static async Task<int> RunAsync(StoreSettings settings, Journal journal, bool running)
    {
        using var store = new Counts.Store(settings);
        return await Program.RecoverCheckAndRunAsync(
            () => store.RecoverAsync(), recovered => VerifyAsync(store, journal),
            s => RunSession(store, journal, s), journal, running);
    }

    private enum Kind
    {
        RMW,
        Upsert,
        Delete,
    }

    /// <summary>Operation <paramref name="serialNo"/> of session <paramref name="session"/>: what, which key, with what.</summary>
    private static (Kind Kind, long Key, long Value) OperationOf(int session, long serialNo)
    {
        long half = serialNo / 2;
        if (serialNo % 2 == 0)
        {
            return (Kind.Upsert, (session * 10_000L) + FillerBase + (half % FillerKeys), serialNo);
        }

        long key = (session * 10_000L) + (half % HotKeys);
        return (half / HotKeys % 5) switch
        {
            0 or 1 or 4 => (Kind.RMW, key, serialNo),
            2 => (Kind.Upsert, key, serialNo),
            _ => (Kind.Delete, key, 0),
        };
    }

    private static IEnumerable<long> KeysOf(int session) =>
        Enumerable.Range(0, HotKeys).Select(k => (session * 10_000L) + k)
            .Concat(Enumerable.Range(0, FillerKeys).Select(k => (session * 10_000L) + FillerBase + k));

    private static void RunSession(Counts.Store store, Journal journal, int s)
    {
        using var session = store.ContinueSession(Program.SessionId(s), out _);
        session.Committed += Program.JournalCommits(journal, s);
        while (true)
        {
            long serialNo = session.NextSerialNo;
            (Kind kind, long key, long value) = OperationOf(s, serialNo);
            _ = kind switch
            {
                Kind.RMW => session.RMW(key, value),
                Kind.Upsert => session.Upsert(key, value),
                _ => session.Delete(key),
            };
            if (serialNo % 64 == 0)
            {
                session.CompletePending();
            }
        }
    }

    private static async Task<string?> VerifyAsync(Counts.Store store, Journal journal)
    {
        using var reader = store.NewSession();
        for (int s = 0; s < Sessions; s++)
        {
            long told = journal.HighestCommitTold(s);
            CommitPoint[] points = journal.Recoveries(s).ToArray();
            if (points[^1].UntilSerialNo < told)
            {
                return $"LOST session {s}: told durable until {told}, recovered {points[^1]}";
            }

            Dictionary<long, long> expected = Replay(s, points);
            foreach (long key in KeysOf(s))
            {
                ReadResult<long> read = await reader.ReadAsync(key);
                long? actual = read.Status == Status.Ok ? read.Output : null;
                long? wanted = expected.TryGetValue(key, out long value) ? value : null;
                if (actual != wanted)
                {
                    return $"MISMATCH session {s} key {key}: recovered {actual?.ToString(CultureInfo.InvariantCulture) ?? "nothing"}, expected " +
                           $"{wanted?.ToString(CultureInfo.InvariantCulture) ?? "nothing"}";
                }
            }
        }

        return null;
    }

    /// <summary>
    /// The session's surviving operations applied in serial order: each recovery kept the operations after the
    /// previous recovered point up to its own, except those it excluded.
    /// </summary>
    private static Dictionary<long, long> Replay(int session, CommitPoint[] points)
    {
        var state = new Dictionary<long, long>();
        long previous = 0;
        foreach (CommitPoint point in points)
        {
            var excluded = new HashSet<long>(point.ExcludedSerialNos);
            for (long n = previous + 1; n <= point.UntilSerialNo; n++)
            {
                if (excluded.Contains(n))
                {
                    continue;
                }

                (Kind kind, long key, long value) = OperationOf(session, n);
                switch (kind)
                {
                    case Kind.RMW:
                        state[key] = state.GetValueOrDefault(key) + value;
                        break;
                    case Kind.Upsert:
                        state[key] = value;
                        break;
                    default:
                        state.Remove(key);
                        break;
                }
            }

            previous = Math.Max(previous, point.UntilSerialNo);
        }

        return state;
    }
}
