using System.Diagnostics;
using System.Globalization;
using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Xunit.Abstractions;

namespace HybridKV.Tests.Hardening;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// A bounded soak (issue 16): rounds of concurrent sessions on a store larger than memory, checkpoints every few
/// milliseconds, device read and write faults (failed and torn writes), callbacks that throw, then a "crash" at a
/// random point (the store is dropped without a last checkpoint) and recovery, checked against a model: every key holds
/// exactly what each session's recovered commit point says, reads during the run see the session's own writes, and an
/// operation that failed or threw changed nothing. It runs for <c>HYBRIDKV_SOAK_SECONDS</c> (5 by default); the
/// summary goes to the test output and, when <c>HYBRIDKV_SOAK_REPORT</c> names a file, to that file.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class SoakTests(ITestOutputHelper output)
{
    private const int Sessions = 3;
    private const int OwnKeys = 1000;
    private const int SharedKeys = 8;
    private const long SharedBase = 900_000;
    private const long FillerBase = 10_000_000;

    [Fact]
    public async Task Sessions_checkpoints_faults_throwing_callbacks_and_recoveries_keep_every_sessions_prefix()
    {
        TimeSpan duration = TimeSpan.FromSeconds(
            int.TryParse(Environment.GetEnvironmentVariable("HYBRIDKV_SOAK_SECONDS"), out int seconds) && seconds > 0
                ? seconds
                : 5);
        int seed = Environment.TickCount;
        var random = new Random(seed);
        var counters = new Counters();
        var faulty = new FaultInjectingDevice(new MemoryDevice(512, 1L << 26));
        using var checkpoints = new MemoryCheckpointStore();
        StoreSettings settings = StoreOnDevice.Settings(device: faulty) with
        {
            CheckpointStore = checkpoints,
            CheckpointsToKeep = 2,
            IndexBuckets = 1L << 10,
        };
        Guid[] ids = Enumerable.Range(0, Sessions).Select(_ => Guid.NewGuid()).ToArray();
        var durable = new Dictionary<long, long>();
        var clock = Stopwatch.StartNew();
        using (faulty)
        {
            while (clock.Elapsed < duration || counters.Recoveries < 2)
            {
                var round = new RoundPlan(random.Next(), random.Next(4) == 0, random.Next(3) == 0, random.Next(2) == 0);
                try
                {
                    await RunRoundAsync(faulty, settings, ids, durable, round, counters);
                }
                catch (Exception error)
                {
                    throw new InvalidOperationException(
                        $"Soak seed {seed}, round {counters.Recoveries} ({round}) failed: {error.Message}", error);
                }
            }
        }

        string summary = string.Create(CultureInfo.InvariantCulture,
            $"soak seed {seed}: {clock.Elapsed.TotalSeconds:F0} s, {counters.Recoveries} recoveries, " +
            $"{counters.Operations} operations ({counters.PendingOperations} pending, {counters.CheckedReads} reads checked), " +
            $"{counters.Checkpoints} checkpoints committed and {counters.FailedCheckpoints} failed, " +
            $"{faulty.WriteCount} writes {faulty.ReadCount} reads, {counters.ReadFaults} read faults, {counters.WriteFaults} write faults ({counters.TornWrites} torn), " +
            $"{counters.Poisoned} throwing callbacks, {counters.FailedOperations} operations failed by the store, " +
            $"{counters.LostOperations} operations after a commit point lost by a crash, " +
            $"{counters.UncertainKeys} keys whose last pending upsert met a store failure");
        output.WriteLine(summary);
        if (Environment.GetEnvironmentVariable("HYBRIDKV_SOAK_REPORT") is { Length: > 0 } report)
        {
            await File.AppendAllTextAsync(report, summary + Environment.NewLine);
        }

        Assert.True(counters.Checkpoints > 0 && counters.PendingOperations > 0 && counters.Poisoned > 0,
            $"the soak did not reach every path: {summary}");
    }

    private static async Task RunRoundAsync(
        FaultInjectingDevice faulty, StoreSettings settings, Guid[] ids, Dictionary<long, long> durable, RoundPlan plan,
        Counters counters)
    {
        faulty.FailRead = null;
        faulty.FailWrite = null;
        faulty.TearWrite = null;
        var executed = new List<Executed>[Sessions];
        var reported = new CommitPoint?[Sessions];
        IReadOnlyDictionary<Guid, CommitPoint> before;
        using (var store = StoreOnDevice.Create(settings))
        {
            RecoveryResult? recovered = await store.RecoverAsync();
            Assert.Empty(recovered?.Skipped ?? []);
            before = recovered?.Sessions ?? new Dictionary<Guid, CommitPoint>();
            using (var reader = store.NewSession())
            {
                AssertMatches(reader, durable, counters, _ => "at the start of the round");
            }

            InjectFaults(faulty, plan, counters);
            using var stop = new CancellationTokenSource();
            var random = new Random(plan.Seed);
            int operations = random.Next(500, 20_000);
            Task<List<Executed>>[] workers = Enumerable.Range(0, Sessions).Select(s =>
            {
                int sessionSeed = random.Next();
                return Task.Factory.StartNew(
                    () => RunSession(store, ids[s], s, sessionSeed, operations, durable, counters, reported),
                    CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
            }).ToArray();
            Task checkpointer = TakeCheckpointsAsync(store, random.Next(), counters, stop.Token);
            for (int s = 0; s < Sessions; s++)
            {
                executed[s] = await workers[s].WaitAsync(TimeSpan.FromMinutes(2));
            }

            await stop.CancelAsync();
            await checkpointer.WaitAsync(TimeSpan.FromMinutes(2));
            faulty.FailRead = null;
            faulty.FailWrite = null;
            faulty.TearWrite = null;

            // The crash: the store goes away without a last checkpoint.
        }

        using var again = StoreOnDevice.Create(settings);
        RecoveryResult? result = await again.RecoverAsync();
        counters.Recoveries++;
        Assert.Empty(result?.Skipped ?? []);
        IReadOnlyDictionary<Guid, CommitPoint> after = result?.Sessions ?? new Dictionary<Guid, CommitPoint>();
        var uncertain = new HashSet<long>();
        for (int s = 0; s < Sessions; s++)
        {
            CommitPoint point = RecoveredPoints.Of(after, ids[s], reported[s], LastSerialNo(executed[s]));
            long previous = before.GetValueOrDefault(ids[s], CommitPoint.None).UntilSerialNo;
            Assert.True(point.UntilSerialNo >= previous, $"session {s} went back from {previous} to {point}");
            foreach (Executed done in executed[s])
            {
                if (!point.Includes(done.SerialNo))
                {
                    counters.LostOperations++;
                }
                else if (done.Uncertain)
                {
                    uncertain.Add(done.Key);
                }
                else if (done.Effective)
                {
                    Apply(durable, done.Key, done.Kind, done.Value);
                }
            }
        }

        using var verifier = again.NewSession();
        foreach (long key in uncertain)
        {
            // Nothing tells whether the operation took effect: from here on the key holds what recovery found.
            (Status status, long value) = verifier.ReadNow(key);
            if (status == Status.Ok)
            {
                durable[key] = value;
            }
            else
            {
                durable.Remove(key);
            }

            counters.UncertainKeys++;
        }

        string Describe(long key) => $"recovered version {result?.Version}; points before " +
            string.Join(", ", ids.Select(id => before.GetValueOrDefault(id, CommitPoint.None))) + ", after " +
            string.Join(", ", ids.Select(id => after.TryGetValue(id, out CommitPoint? p) ? p.ToString() : "not named")) +
            ", reported " + string.Join(", ", reported.Select(p => p?.ToString() ?? "nothing")) + "; operations " +
            string.Join(", ", executed.Select(e => e.Count == 0 ? "none" : $"#{e[0].SerialNo}-#{e[^1].SerialNo}")) +
            $"; on {key} this round: " + string.Join(" ", executed.SelectMany((ops, owner) => ops
                .Where(e => e.Key == key)
                .Select(e => $"s{owner}#{e.SerialNo}:{e.Kind}:{e.Value}:{e.Status}{(e.WentPending ? "p" : "")}" +
                             $"{(e.Effective ? "" : "!")}{(RecoveredPoints.Of(after, ids[owner], reported[owner], LastSerialNo(ops)).Includes(e.SerialNo) ? "" : "-")}")));
        AssertMatches(verifier, durable, counters, Describe);
    }

    private static long LastSerialNo(List<Executed> executed) => executed.Count == 0 ? 0 : executed[^1].SerialNo;

    private static void InjectFaults(FaultInjectingDevice faulty, RoundPlan plan, Counters counters)
    {
        if (plan.ReadFaults)
        {
            var faults = new Random(plan.Seed ^ 0x5eed);
            faulty.FailRead = _ =>
            {
                lock (faults)
                {
                    if (faults.Next(50) != 0)
                    {
                        return false;
                    }
                }

                Interlocked.Increment(ref counters.ReadFaults);
                return true;
            };
        }

        if (plan.WriteFault)
        {
            // One write, some way into the round, fails (or lands torn); the store must stop taking writes it cannot
            // make durable, and recovery must find every committed checkpoint intact.
            long failAt = faulty.WriteCount + new Random(plan.Seed).Next(1, 30);
            int failed = 0;
            if (plan.Torn)
            {
                faulty.TearWrite = request => request.Sequence == failAt && request.Length > 512 &&
                                              Interlocked.Exchange(ref failed, 1) == 0
                    ? Count(request.Length / 1024, ref counters.TornWrites)
                    : null;
            }
            else
            {
                faulty.FailWrite = request => request.Sequence == failAt && Interlocked.Exchange(ref failed, 1) == 0 &&
                                              Count(1, ref counters.WriteFaults) > 0;
            }
        }

        static int Count(int result, ref long counter)
        {
            Interlocked.Increment(ref counter);
            return result;
        }
    }

    private static async Task TakeCheckpointsAsync(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, int seed, Counters counters,
        CancellationToken stop)
    {
        var random = new Random(seed);
        while (!stop.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(random.Next(1, 6), stop);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            CheckpointKind kind = random.Next(4) == 0 ? CheckpointKind.Full : CheckpointKind.LogOnly;
            CheckpointMode mode = random.Next(2) == 0 ? CheckpointMode.FoldOver : CheckpointMode.Snapshot;
            try
            {
                await store.TakeCheckpointAsync(kind, mode, CancellationToken.None);
                Interlocked.Increment(ref counters.Checkpoints);
            }
            catch (Exception error) when (error is StorageDeviceException or IOException or InvalidOperationException)
            {
                // A device fault fails the checkpoint, never silently: it stays uncommitted.
                Interlocked.Increment(ref counters.FailedCheckpoints);
            }
        }
    }

    private static List<Executed> RunSession(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, Guid id, int owner, int seed,
        int operations, Dictionary<long, long> durable, Counters counters, CommitPoint?[] reported)
    {
        var random = new Random(seed);
        var run = new SessionRun(owner, durable);
        using CountSession session = store.ContinueSession(id, out _);
        // Commits complete one at a time, each reporting a point at least as far as the one before.
        session.Committed += (_, point) => Volatile.Write(ref reported[owner], point);
        long filler = FillerBase + (owner * 1_000_000L) + random.Next(100_000);
        for (int i = 0; i < operations; i++)
        {
            int dice = random.Next(100);
            OpKind kind = dice switch
            {
                < 45 => OpKind.Rmw,
                < 60 => OpKind.Upsert,
                < 68 => OpKind.Delete,
                < 90 => OpKind.Read,
                < 95 => OpKind.Filler,
                _ => OpKind.Poison,
            };
            long key = kind == OpKind.Filler ? filler++
                : dice < 15 ? SharedBase + random.Next(SharedKeys)
                : OwnKey(owner, random.Next(OwnKeys));
            long value = kind == OpKind.Poison ? CountFunctions.Poison : random.Next(1, 1000);
            var context = new CountContext();
            Status status;
            long output = 0;
            try
            {
                status = kind switch
                {
                    OpKind.Read => session.Read(key, 0, ref output, context),
                    OpKind.Rmw => session.RMW(key, value, context),
                    OpKind.Upsert or OpKind.Filler => session.Upsert(key, value),
                    OpKind.Delete => session.Delete(key, context),
                    _ => random.Next(2) == 0 ? session.RMW(key, value, context) : session.Upsert(key, value),
                };
            }
            catch (PoisonException)
            {
                status = Status.Error;
            }
            catch (Exception error) when (IsStoreFailure(error))
            {
                // A write the device refused: the store reports it and changes nothing.
                Interlocked.Increment(ref counters.FailedOperations);
                status = Status.Error;
            }

            Interlocked.Increment(ref counters.Operations);
            if (kind == OpKind.Poison)
            {
                Interlocked.Increment(ref counters.Poisoned);
            }

            int index = run.Issued(session.LastSerialNo, key, kind, value);
            if (status == Status.Pending)
            {
                Interlocked.Increment(ref counters.PendingOperations);
                run.Executed[index] = run.Executed[index] with { WentPending = true };
                run.Pending.Add((index, context));
            }
            else
            {
                run.Settle(index, status, output, counters);
            }

            if (run.Pending.Count > 0 && (i % 32 == 0 || i == operations - 1))
            {
                CompleteAll(session, run, counters);
            }
        }

        CompleteAll(session, run, counters);
        return run.Executed;
    }

    private static void CompleteAll(CountSession session, SessionRun run, Counters counters)
    {
        try
        {
            session.CompletePending(wait: true);
        }
        catch (Exception error) when (error is PoisonException or AggregateException || IsStoreFailure(error))
        {
            // The operations they came from completed with an error; the others went on. A store failure among them
            // may belong to a pending upsert, which no callback reports.
            IEnumerable<Exception> failures = error is AggregateException all ? all.InnerExceptions : [error];
            run.StoreFailedWhilePending |= failures.Any(IsStoreFailure);
        }

        // In issue order: a pending read's expectation depends on the updates issued before it.
        foreach ((int index, CountContext context) in run.Pending)
        {
            run.Settle(index, context.LastStatus, context.Output, counters);
        }

        run.Pending.Clear();
        run.StoreFailedWhilePending = false;
    }

    /// <summary>
    /// One session's operations in a round. Its own keys are changed by it alone, and a session's operations on one key
    /// take effect in issue order, so what a read of an own key must return follows from the session's earlier
    /// operations on it that took effect.
    /// </summary>
    private sealed class SessionRun(int owner, Dictionary<long, long> durable)
    {
        private readonly Dictionary<long, List<int>> _byKey = new();

        public List<Executed> Executed { get; } = new();

        public List<(int Index, CountContext Context)> Pending { get; } = new();

        public bool StoreFailedWhilePending { get; set; }

        public int Issued(long serialNo, long key, OpKind kind, long value)
        {
            Executed.Add(new Executed(serialNo, key, kind, value, Effective: false));
            int index = Executed.Count - 1;
            if (IsOwn(key))
            {
                (_byKey.TryGetValue(key, out List<int>? list) ? list : _byKey[key] = new()).Add(index);
            }

            return index;
        }

        public void Settle(int index, Status status, long output, Counters counters)
        {
            Executed done = Executed[index];
            if (done.Kind is OpKind.Upsert or OpKind.Filler && done.WentPending)
            {
                // No callback reports a pending upsert: it took effect unless CompletePending threw for a store failure
                // (which does not say for which operation).
                Executed[index] = done with { Effective = !StoreFailedWhilePending, Uncertain = StoreFailedWhilePending };
                return;
            }

            if (done.Kind != OpKind.Read)
            {
                Executed[index] = done with { Effective = done.Kind != OpKind.Poison && status is Status.Ok or Status.NotFound, Status = status };
                return;
            }

            if (!IsOwn(done.Key) || status == Status.Error)
            {
                return;
            }

            HashSet<long?> possible = PossibleBefore(done.Key, index);
            long? found = status == Status.Ok ? output : null;
            Assert.True(status is Status.Ok or Status.NotFound && possible.Contains(found),
                $"session {owner}, operation {done.SerialNo}: read {done.Key} gave {status} {output}, expected one of " +
                $"[{string.Join(", ", possible.Select(v => v?.ToString(CultureInfo.InvariantCulture) ?? "absent"))}]; " +
                $"from {durable.GetValueOrDefault(done.Key)}: " + string.Join(" ", _byKey[done.Key].Where(i => i < index).Select(i => Executed[i]).Select(e => $"#{e.SerialNo}:{e.Kind}:{e.Value}:{e.Status}{(e.WentPending ? "p" : "")}")));
            Interlocked.Increment(ref counters.CheckedReads);
        }

        /// <summary>
        /// What the key may hold before operation <paramref name="index"/>: one value, or several when an earlier
        /// pending upsert met a store failure (nothing says whether it took effect, so both outcomes go on).
        /// </summary>
        private HashSet<long?> PossibleBefore(long key, int index)
        {
            var possible = new HashSet<long?> { durable.TryGetValue(key, out long initial) ? initial : null };
            foreach (int earlier in _byKey[key])
            {
                if (earlier >= index)
                {
                    break;
                }

                Executed done = Executed[earlier];
                if (done.Effective || done.Uncertain)
                {
                    var next = new HashSet<long?>(possible.Select(value => After(value, key, done)));
                    if (done.Uncertain)
                    {
                        next.UnionWith(possible);
                    }

                    possible = next;
                }
            }

            return possible;
        }

        private static long? After(long? value, long key, Executed done)
        {
            var model = new Dictionary<long, long>();
            if (value is { } v)
            {
                model[key] = v;
            }

            Apply(model, key, done.Kind, done.Value);
            return model.TryGetValue(key, out long after) ? after : null;
        }

        private bool IsOwn(long key) => key >= owner * 1000L && key < (owner * 1000L) + OwnKeys;
    }

    private static bool IsStoreFailure(Exception error) =>
        error is StorageDeviceException or IOException or InvalidOperationException or LogFullException;

    private static void Apply(Dictionary<long, long> model, long key, OpKind kind, long value)
    {
        switch (kind)
        {
            case OpKind.Rmw:
                model[key] = model.GetValueOrDefault(key) + value;
                break;
            case OpKind.Upsert or OpKind.Filler:
                model[key] = value;
                break;
            case OpKind.Delete:
                model.Remove(key);
                break;
        }
    }

    private static void AssertMatches(
        CountSession session, Dictionary<long, long> model, Counters counters, Func<long, string> describe)
    {
        var wrong = new List<string>();
        long? firstWrong = null;
        IEnumerable<long> keys = Enumerable.Range(0, Sessions)
            .SelectMany(s => Enumerable.Range(0, OwnKeys).Select(k => OwnKey(s, k)))
            .Concat(Enumerable.Range(0, SharedKeys).Select(k => SharedBase + k))
            .Concat(model.Keys.Where(k => k >= FillerBase));
        foreach (long key in keys.Distinct())
        {
            (Status status, long value) = session.ReadNow(key);
            (Status, long) expected = model.TryGetValue(key, out long v) ? (Status.Ok, v) : (Status.NotFound, 0);
            if ((status, value) != expected)
            {
                wrong.Add($"{key}: {status} {value}, expected {expected}");
                firstWrong ??= key;
            }
        }

        counters.VerifiedKeys += keys.Count();
        Assert.True(wrong.Count == 0,
            $"{wrong.Count} keys wrong after recovery: {string.Join("; ", wrong.Take(20))} ({describe(firstWrong ?? 0)})");
    }

    private static long OwnKey(int owner, int key) => (owner * 1000L) + key;

    private enum OpKind
    {
        Read,
        Rmw,
        Upsert,
        Delete,
        Filler,
        Poison,
    }

    private sealed record Executed(
        long SerialNo, long Key, OpKind Kind, long Value, bool Effective, Status Status = Status.Pending,
        bool WentPending = false, bool Uncertain = false);

    private sealed record RoundPlan(int Seed, bool WriteFault, bool Torn, bool ReadFaults);

    private sealed class Counters
    {
        public long Operations;
        public long PendingOperations;
        public long CheckedReads;
        public long Checkpoints;
        public long FailedCheckpoints;
        public long ReadFaults;
        public long WriteFaults;
        public long TornWrites;
        public long Poisoned;
        public long FailedOperations;
        public long LostOperations;
        public long Recoveries;
        public long VerifiedKeys;
        public long UncertainKeys;
    }
}
