using System.Globalization;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.PendingOrder;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Every pair and triple of Read / Upsert / RMW / Delete issued back to back on one key whose newest record is on the
/// device (a value, a tombstone, or no record of the key at all on a chain that is): each operation's result, and the
/// key's final value, must be those of the operations applied one by one in the order they were issued.
/// </summary>
[Trait("Category", "PendingOrder")]
public sealed class PendingSequenceTests : IDisposable
{
    private const long FirstKey = 100_000;
    private const long Twin = 1_000_000;

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    public enum Cold
    {
        /// <summary>The key's newest record is a value on the device.</summary>
        Value,

        /// <summary>The key's newest record is a tombstone on the device.</summary>
        Tombstone,

        /// <summary>The key was never written, but shares its hash chain with a key on the device.</summary>
        Absent,
    }

    public enum Kind
    {
        Read,
        Upsert,
        RMW,
        Delete,
    }

    /// <summary>What an operation returned, once complete.</summary>
    private sealed record Outcome(Status Status, long Output);

    [Theory]
    [InlineData(Cold.Value)]
    [InlineData(Cold.Tombstone)]
    [InlineData(Cold.Absent)]
    public void Sequences_on_a_cold_key_take_effect_in_issue_order(Cold cold)
    {
        Kind[][] sequences = Sequences(2).Concat(Sequences(3)).ToArray();
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()), HashMode.TwinsAMillionApart);
        using var session = store.NewSession();
        for (int i = 0; i < sequences.Length; i++)
        {
            long key = FirstKey + i;
            session.Upsert(key, 10);
            if (cold == Cold.Tombstone)
            {
                Assert.Equal(Status.Ok, session.Delete(key));
            }
        }

        session.Preload(20_000, first: 0);
        Assert.True(store.HeadAddress > StoreOnDevice.MemoryBytes, "nothing was evicted");

        var failures = new List<string>();
        int pending = 0;
        for (int i = 0; i < sequences.Length; i++)
        {
            long key = cold == Cold.Absent ? Twin + FirstKey + i : FirstKey + i;
            long? initial = cold == Cold.Value ? 10 : null;
            (Outcome[] outcomes, int wentPending) = Run(session, key, sequences[i]);
            pending += wentPending;
            (Outcome[] expected, long? final) = Model(initial, sequences[i]);
            (Status status, long value) = session.ReadNow(key);
            var actualFinal = status == Status.Ok ? value : (long?)null;
            if (!outcomes.SequenceEqual(expected) || actualFinal != final)
            {
                failures.Add($"{string.Join(",", sequences[i])}: got {string.Join(" ", outcomes.Select(o => o.ToString()))} " +
                    $"then {actualFinal?.ToString(CultureInfo.InvariantCulture) ?? "none"}; expected {string.Join(" ", expected.Select(o => o.ToString()))} " +
                    $"then {final?.ToString(CultureInfo.InvariantCulture) ?? "none"}");
            }
        }

        Assert.True(failures.Count == 0, string.Join(Environment.NewLine, failures));
        Assert.True(pending >= sequences.Length, "the operations did not go to the device");
    }

    private static IEnumerable<Kind[]> Sequences(int length) => length == 0
        ? [[]]
        : Sequences(length - 1).SelectMany(prefix => Enum.GetValues<Kind>().Select(kind => prefix.Append(kind).ToArray()));

    /// <summary>Issues the operations back to back, then completes them all.</summary>
    private static (Outcome[] Outcomes, int Pending) Run(CountSession session, long key, Kind[] sequence)
    {
        var immediate = new Outcome?[sequence.Length];
        var contexts = new CountContext[sequence.Length];
        int pending = 0;
        for (int i = 0; i < sequence.Length; i++)
        {
            contexts[i] = new CountContext();
            long output = 0;
            Status status = sequence[i] switch
            {
                Kind.Read => session.Read(key, 0, ref output, contexts[i]),
                Kind.Upsert => session.Upsert(key, UpsertValue(i)),
                Kind.RMW => session.RMW(key, RmwInput(i), contexts[i]),
                _ => session.Delete(key, contexts[i]),
            };
            if (status == Status.Pending)
            {
                pending++;
            }
            else
            {
                immediate[i] = new Outcome(status, sequence[i] == Kind.Read ? output : 0);
            }
        }

        Assert.True(session.CompletePending(wait: true));
        return (sequence.Select((kind, i) => immediate[i] ?? (kind == Kind.Upsert
            ? new Outcome(Status.Ok, 0)
            : new Outcome(contexts[i].LastStatus, kind == Kind.Read ? contexts[i].Output : 0))).ToArray(), pending);
    }

    /// <summary>
    /// The operations applied one by one. A delete is blind: while the key's newest record is on the device it appends a
    /// tombstone without reading it, and reports Ok whatever the device held.
    /// </summary>
    private static (Outcome[] Outcomes, long? Final) Model(long? value, Kind[] sequence)
    {
        var outcomes = new Outcome[sequence.Length];
        bool newestInMemory = false;
        for (int i = 0; i < sequence.Length; i++)
        {
            switch (sequence[i])
            {
                case Kind.Read:
                    outcomes[i] = value is { } v ? new Outcome(Status.Ok, v) : new Outcome(Status.NotFound, 0);
                    break;
                case Kind.Upsert:
                    value = UpsertValue(i);
                    outcomes[i] = new Outcome(Status.Ok, 0);
                    newestInMemory = true;
                    break;
                case Kind.RMW:
                    value = (value ?? 0) + RmwInput(i);
                    outcomes[i] = new Outcome(Status.Ok, 0);
                    newestInMemory = true;
                    break;
                default:
                    outcomes[i] = new Outcome(newestInMemory && value is null ? Status.NotFound : Status.Ok, 0);
                    value = null;
                    newestInMemory = true;
                    break;
            }
        }

        return (outcomes, value);
    }

    private static long UpsertValue(int position) => 1000 * (position + 1);

    private static long RmwInput(int position) => 3 + position;
}
