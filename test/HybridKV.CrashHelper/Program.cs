using System.Globalization;
using CountStore;
using HybridKV;
using HybridKV.Checkpoints;

namespace HybridKV.CrashHelper;

/// <summary>
/// A deterministic CPR workload for the crash tests. <c>run DIR SEED</c> recovers the store in DIR, checks the
/// recovered state against every commit point recovered before (exit 3) and against every commit it was ever told
/// about (exit 4), then runs RMWs from several sessions with periodic checkpoints until it is killed.
/// <c>verify DIR</c> does the checks and exits 0. Operation n of session s adds n to key s * 1000 + n % Keys, so the
/// expected value of every key follows from the commit points alone. <c>run-varlen</c> and <c>verify-varlen</c> do
/// the same with byte-sequence keys and values (<see cref="VarLenWorkload"/>), <c>run-hot</c> and <c>verify-hot</c>
/// with operations piling up on a few cold keys (<see cref="HotKeysWorkload"/>).
/// </summary>
internal static class Program
{
    internal const int Sessions = 3;
    private const int Keys = 200;

    private static int _announcedCommit;

    private static async Task<int> Main(string[] args)
    {
        if (args.Length < 2 || args[0] is not ("run" or "verify" or "run-varlen" or "verify-varlen" or "run-hot" or "verify-hot"))
        {
            Console.Error.WriteLine(
                "usage: run DIR SEED | verify DIR | run-varlen DIR SEED | verify-varlen DIR | run-hot DIR SEED | verify-hot DIR");
            return 2;
        }

        string directory = args[1];
        int seed = args.Length > 2 ? int.Parse(args[2], CultureInfo.InvariantCulture) : 0;
        var journal = new Journal(directory);
        using var loggerFactory = new Microsoft.Extensions.Logging.LoggerFactory([new StderrLoggerProvider()]);
        bool running = args[0].StartsWith("run", StringComparison.Ordinal);
        if (args[0].EndsWith("varlen", StringComparison.Ordinal))
        {
            return await VarLenWorkload.RunAsync(Settings(directory, running, seed, loggerFactory), journal, running);
        }

        if (args[0].EndsWith("hot", StringComparison.Ordinal))
        {
            return await HotKeysWorkload.RunAsync(Settings(directory, running, seed, loggerFactory), journal, running);
        }

        using var store = new Counts.Store(Settings(directory, running, seed, loggerFactory));
        return await RecoverCheckAndRunAsync(
            () => store.RecoverAsync(), recovered => VerifyAsync(store, journal, recovered),
            s => RunSession(store, journal, s), journal, running);
    }

    /// <summary>
    /// What every workload does: recover, check the recovered state (exit 4 for a commit that was lost, 3 for any
    /// other mismatch), and unless only verifying, run the sessions until killed.
    /// </summary>
    internal static async Task<int> RecoverCheckAndRunAsync(
        Func<Task<RecoveryResult?>> recover,
        Func<CommitPoint[], Task<string?>> check,
        Action<int> runSession,
        Journal journal,
        bool running)
    {
        Console.WriteLine("recovering");
        RecoveryResult? result = await recover();
        var recovered = new CommitPoint[Sessions];
        for (int s = 0; s < Sessions; s++)
        {
            recovered[s] = result?.Sessions.GetValueOrDefault(SessionId(s)) ?? CommitPoint.None;
        }

        journal.AppendRecovery(recovered);
        if (await check(recovered) is { } problem)
        {
            Console.WriteLine(problem);
            return problem.StartsWith("LOST", StringComparison.Ordinal) ? 4 : 3;
        }

        Console.WriteLine($"verified version {result?.Version ?? 0}: {string.Join("; ", recovered.Select(p => p.ToString()))}");
        if (!running)
        {
            return 0;
        }

        var workers = Enumerable.Range(0, Sessions).Select(s => Task.Factory.StartNew(
            () => runSession(s), TaskCreationOptions.LongRunning)).ToArray();
        Console.WriteLine("running");
        await Task.WhenAll(workers);
        return 0;
    }

    /// <summary>Journals every commit point session <paramref name="session"/> is told about; announces the first.</summary>
    internal static EventHandler<CommitPoint> JournalCommits(Journal journal, int session) => (_, point) =>
    {
        journal.AppendCommit(session, point);
        if (Interlocked.Exchange(ref _announcedCommit, 1) == 0)
        {
            Console.WriteLine("committed");
        }
    };

    /// <summary>Small pages and memory over the directory, periodic checkpoints of the seed's mode when running, and
    /// automatic compaction.</summary>
    internal static StoreSettings Settings(
        string directory, bool running, int seed, Microsoft.Extensions.Logging.ILoggerFactory loggerFactory) => new()
    {
        LogDirectory = Path.Combine(directory, "store"),
        PageSizeBits = 12,
        MemorySizeBytes = 1L << 16,
        LogSegmentSizeBits = 16,
        IndexBuckets = 1L << 10,
        CheckpointInterval = running ? TimeSpan.FromMilliseconds(20 + (seed % 4 * 10)) : null,
        PeriodicCheckpointMode = (seed % 3) switch
        {
            0 => CheckpointMode.FoldOver,
            1 => CheckpointMode.Snapshot,
            _ => CheckpointMode.Auto,
        },
        IndexCheckpointEvery = 3,
        CheckpointsToKeep = 2,
        // Compaction by policy from 128 KiB of log: fold-overs every few tens of milliseconds grow the log past it
        // within a second, so kills land before, during and after compactions.
        LogCompactionRatio = 2,
        LogCompactionMinBytes = 128 << 10,
        LoggerFactory = loggerFactory,
    };

    internal static Guid SessionId(int session) => new(session + 1, 0, 0, new byte[8]);

    private static long KeyOf(int session, long serialNo) => (session * 1000L) + (serialNo % Keys);

    internal static void RunSession(Counts.Store store, Journal journal, int s)
    {
        using var session = store.ContinueSession(SessionId(s), out _);
        session.Committed += JournalCommits(journal, s);
        while (true)
        {
            long serialNo = session.NextSerialNo;
            session.RMW(KeyOf(s, serialNo), serialNo);
            if (serialNo % 64 == 0)
            {
                session.CompletePending();
            }
        }
    }

    /// <summary>
    /// Every key must hold the sum of the operations that survived: for each recovery in turn, the session's serial
    /// numbers after the previous recovered commit point up to this one, minus the excluded ones.
    /// </summary>
    internal static async Task<string?> VerifyAsync(
        Counts.Store store, Journal journal, CommitPoint[] recovered)
    {
        for (int s = 0; s < Sessions; s++)
        {
            long told = journal.HighestCommitTold(s);
            if (recovered[s].UntilSerialNo < told)
            {
                return $"LOST session {s}: told durable until {told}, recovered {recovered[s]}";
            }
        }

        long[,] expected = new long[Sessions, Keys];
        for (int s = 0; s < Sessions; s++)
        {
            long previous = 0;
            foreach (CommitPoint point in journal.Recoveries(s))
            {
                for (int k = 0; k < Keys; k++)
                {
                    expected[s, k] += SumOfSerials(previous, point.UntilSerialNo, k);
                }

                foreach (long excluded in point.ExcludedSerialNos.Where(e => e > previous))
                {
                    expected[s, excluded % Keys] -= excluded;
                }

                previous = Math.Max(previous, point.UntilSerialNo);
            }
        }

        using var reader = store.NewSession();
        for (int s = 0; s < Sessions; s++)
        {
            for (int k = 0; k < Keys; k++)
            {
                long key = (s * 1000L) + k;
                ReadResult<long> read = await reader.ReadAsync(key);
                long output = read.Output;
                Status status = read.Status;
                long value = status == Status.Ok ? output : 0;
                if (value != expected[s, k])
                {
                    return $"MISMATCH session {s} key {key}: recovered {value}, expected {expected[s, k]}";
                }
            }
        }

        return null;
    }

    /// <summary>The sum of the serial numbers n in (from, to] with n % Keys == residue.</summary>
    private static long SumOfSerials(long from, long to, int residue)
    {
        long first = from + 1 + (((residue - ((from + 1) % Keys)) % Keys + Keys) % Keys);
        if (first > to)
        {
            return 0;
        }

        long count = ((to - first) / Keys) + 1;
        return (count * first) + (Keys * count * (count - 1) / 2);
    }
}
