using System.Buffers;
using HybridKV.Checkpoints;

namespace HybridKV.CrashHelper;

/// <summary>
/// The crash workload with byte-sequence keys and values. Operation n of session s upserts the key
/// <c>"s/n % Keys"</c> with a value of <c>n * 37 % 600</c> bytes made from n, so values shrink and grow in place and
/// move to the tail; the expected value of every key is that of the latest operation the commit points say survived.
/// </summary>
internal static class VarLenWorkload
{
    private const int Sessions = 3;
    private const int Keys = 50;

    private static int _announcedCommit;

    public static async Task<int> RunAsync(StoreSettings settings, Journal journal, bool running)
    {
        using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(settings);
        Console.WriteLine("recovering");
        RecoveryResult? result = await store.RecoverAsync();
        var recovered = new CommitPoint[Sessions];
        for (int s = 0; s < Sessions; s++)
        {
            recovered[s] = result?.Sessions.GetValueOrDefault(Program.SessionId(s)) ?? CommitPoint.None;
        }

        journal.AppendRecovery(recovered);
        if (Verify(store, journal, recovered) is { } problem)
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
            () => RunSession(store, journal, s), TaskCreationOptions.LongRunning)).ToArray();
        Console.WriteLine("running");
        await Task.WhenAll(workers);
        return 0;
    }

    private static string KeyOf(int session, long serialNo) => $"{session}/{serialNo % Keys}";

    private static byte[] ValueOf(int session, long serialNo)
    {
        byte[] value = new byte[serialNo * 37 % 600];
        for (int i = 0; i < value.Length; i++)
        {
            value[i] = (byte)(serialNo + i + session);
        }

        return value;
    }

    private static void RunSession(
        HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> store, Journal journal, int s)
    {
        using var session = store.ContinueSession(Program.SessionId(s), out _);
        session.Committed += (_, point) =>
        {
            journal.AppendCommit(s, point);
            if (Interlocked.Exchange(ref _announcedCommit, 1) == 0)
            {
                Console.WriteLine("committed");
            }
        };
        while (true)
        {
            long serialNo = session.NextSerialNo;
            session.Upsert(KeyOf(s, serialNo), ValueOf(s, serialNo));
        }
    }

    private static string? Verify(
        HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions> store,
        Journal journal,
        CommitPoint[] recovered)
    {
        using var reader = store.NewSession();
        for (int s = 0; s < Sessions; s++)
        {
            long told = journal.HighestCommitTold(s);
            if (recovered[s].UntilSerialNo < told)
            {
                return $"LOST session {s}: told durable until {told}, recovered {recovered[s]}";
            }

            CommitPoint[] points = journal.Recoveries(s).ToArray();
            for (int k = 0; k < Keys; k++)
            {
                long latest = LatestSurvivor(points, k);
                byte[]? expected = latest > 0 ? ValueOf(s, latest) : null;
                Status status = reader.Read($"{s}/{k}", out IMemoryOwner<byte>? value);
                using (value)
                {
                    byte[]? actual = status == Status.Ok ? value!.Memory.ToArray() : null;
                    if (!(expected ?? []).AsSpan().SequenceEqual(actual ?? []) || (expected is null) != (actual is null))
                    {
                        return $"MISMATCH session {s} key {k}: recovered {Describe(actual)}, expected operation " +
                               $"{latest}: {Describe(expected)}";
                    }
                }
            }
        }

        return null;
    }

    private static string Describe(byte[]? value) => value is null ? "nothing" : $"{value.Length} bytes";

    /// <summary>
    /// The latest serial number n with n % Keys == residue that survived: each recovery kept the operations after the
    /// previous recovered point up to its own, except those it excluded.
    /// </summary>
    private static long LatestSurvivor(CommitPoint[] points, int residue)
    {
        for (int j = points.Length - 1; j >= 0; j--)
        {
            long previous = 0;
            for (int i = 0; i < j; i++)
            {
                previous = Math.Max(previous, points[i].UntilSerialNo);
            }

            long until = points[j].UntilSerialNo;
            for (long n = until - ((until - residue) % Keys + Keys) % Keys; n > previous; n -= Keys)
            {
                if (!points[j].ExcludedSerialNos.Contains(n))
                {
                    return n;
                }
            }
        }

        return 0;
    }
}
