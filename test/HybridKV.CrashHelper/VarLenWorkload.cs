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
    private const int Sessions = Program.Sessions;
    private const int Keys = 50;

    public static async Task<int> RunAsync(StoreSettings settings, Journal journal, bool running)
    {
        using var store = new HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>(settings);
        return await Program.RecoverCheckAndRunAsync(
            () => store.RecoverAsync(), recovered => Task.FromResult(Verify(store, journal, recovered)),
            s => RunSession(store, journal, s), journal, running);
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
        session.Committed += Program.JournalCommits(journal, s);
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
