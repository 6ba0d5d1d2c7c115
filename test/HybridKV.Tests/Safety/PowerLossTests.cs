using System.Globalization;
using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Xunit.Abstractions;

namespace HybridKV.Tests.Safety;

using CountSession = HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// Power loss, not only process kills (issue 17, item 8): sessions update a store larger than memory while
/// checkpoints of every kind and mode run, and the power is cut at a random moment, dropping, keeping some of or
/// tearing at sector boundaries every write of the log and of checkpoint parts that was not made durable. The next
/// machine recovers, and every session must find exactly the prefix its recovered commit point names (every key holds
/// what those operations imply, and nothing after them), including every commit it had been told was durable.
/// Scenarios run in chains (each recovery is the start of the next run); <c>HYBRIDKV_POWER_LOSS_SCENARIOS</c> sets how
/// many (1,000 by default).
/// </summary>
[Trait("Category", "Safety")]
public sealed class PowerLossTests(ITestOutputHelper output)
{
    private const int Sessions = 2;
    private const int KeysPerSession = 200;
    private const int ScenariosPerChain = 10;
    private static readonly TimeSpan Guard = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task After_a_power_loss_at_any_moment_every_session_recovers_its_exact_prefix_and_every_acknowledged_commit()
    {
        int scenarios = int.TryParse(Environment.GetEnvironmentVariable("HYBRIDKV_POWER_LOSS_SCENARIOS"), out int wanted) &&
                        wanted > 0
            ? wanted
            : 1000 * TestScale.Factor;
        int seed = Environment.TickCount;
        var totals = new Totals();
        for (int chain = 0; chain * ScenariosPerChain < scenarios; chain++)
        {
            int chainSeed = seed + chain;
            try
            {
                await RunChainAsync(new Random(chainSeed), Math.Min(ScenariosPerChain, scenarios - (chain * ScenariosPerChain)),
                    totals);
            }
            catch (Exception error)
            {
                throw new InvalidOperationException($"Power-loss chain with seed {chainSeed} failed: {error.Message}", error);
            }
        }

        output.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"power loss, seed {seed}: {totals.Scenarios} scenarios, {totals.Operations} operations, " +
            $"{totals.Commits} commits, {totals.CutsInsideStorageOperations} cuts inside a storage operation, " +
            $"{totals.CheckpointsInFlight} other cuts during a checkpoint, {totals.LostWrites} writes " +
            $"or sectors lost, {totals.Recovered} recoveries from a checkpoint, {totals.Empty} with none yet"));
        Assert.True(totals.Recovered > totals.Scenarios / 2, $"only {totals.Recovered} of {totals.Scenarios} recovered a checkpoint");
    }

    private static async Task RunChainAsync(Random random, int scenarios, Totals totals)
    {
        var world = new PowerLossWorld();
        bool strict = random.Next(2) == 0;
        Guid[] ids = Enumerable.Range(0, Sessions).Select(_ => Guid.NewGuid()).ToArray();
        var models = Enumerable.Range(0, Sessions).Select(_ => new SessionModel()).ToArray();
        for (int scenario = 0; scenario < scenarios; scenario++)
        {
            StoreSettings settings = new()
            {
                IndexBuckets = 1L << 8,
                PageSizeBits = 9,
                MemorySizeBytes = 1L << 12,
                MutableFraction = 0.5,
                LogDevice = world.Device,
                CheckpointStore = world.Checkpoints,
                CheckpointsToKeep = 2,
                StrictCpr = strict,
                MaxSessions = 8,
            };

            // Half the cuts land inside the storage operations of a flush, a checkpoint or a recovery's write-back.
            world.Arm(random.Next(2) == 0 ? random.Next(1, 400) : long.MaxValue, (PowerLossMode)random.Next(3), random.Next());
            using var store = TestStores.Create(settings);
            if (store.IsRecoveryRequired)
            {
                RecoveryResult? recovered = await store.RecoverAsync().WaitAsync(Guard);
                _ = recovered is null ? Interlocked.Increment(ref totals.Empty) : Interlocked.Increment(ref totals.Recovered);
            }
            else
            {
                Interlocked.Increment(ref totals.Empty);
            }

            var sessions = new CountSession[Sessions];
            for (int s = 0; s < Sessions; s++)
            {
                sessions[s] = store.ContinueSession(ids[s], out CommitPoint point);
                models[s].Recover(point, s);
                models[s].Check(sessions[s], s);
                int index = s;
                PowerLossWorld machine = world;

                // A commit reported once the power is off may be one the next machine never sees: it does not count.
                sessions[s].Committed += (_, committed) =>
                {
                    if (!machine.IsCut)
                    {
                        models[index].Acknowledge(committed);
                    }
                };
            }

            world = await RunUntilPowerLossAsync(store, sessions, models, world, random, totals);
            foreach (CountSession session in sessions)
            {
                session.Dispose();
            }

            Interlocked.Increment(ref totals.Scenarios);
        }
    }

    /// <summary>
    /// Runs each session on its own thread (strict CPR holds a session that crossed back until the others have) while
    /// checkpoints of random kinds and modes follow each other (sessions wait for the next one after a random number
    /// of operations), then cuts the power: before any commit, or a random number of operations after the commit the
    /// scenario waits for, mostly while the next checkpoint is being written.
    /// </summary>
    private static async Task<PowerLossWorld> RunUntilPowerLossAsync(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store, CountSession[] sessions,
        SessionModel[] models, PowerLossWorld world, Random random, Totals totals)
    {
        var run = new RunState(random.Next(4), random.Next(0, 300), random.Next(10, 600));

        int[] seeds = sessions.Select(_ => random.Next()).ToArray();
        Task[] workers = sessions.Select((session, s) => Task.Factory.StartNew(() =>
        {
            var own = new Random(seeds[s]);
            while (!world.IsCut)
            {
                models[s].Issue(session, s, own);
                if (run.OperationDone() && run.TryClaimCut())
                {
                    run.CheckpointInFlightAtCut = run.CheckpointInFlight;
                    world.CutNow();
                }

                if (own.Next(8) == 0)
                {
                    session.CompletePending(wait: own.Next(2) == 0);
                }

                // Operations wait for the checkpoint they are due for, so that a scenario is a few of them, not a flood.
                var spinner = new SpinWait();
                while (run.CheckpointDue && !world.IsCut)
                {
                    session.CompletePending();
                    spinner.SpinOnce();
                }
            }

            session.CompletePending(wait: true);
        }, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        int seed = random.Next();
        Task checkpoints = Task.Run(async () =>
        {
            var own = new Random(seed);
            while (!world.IsCut)
            {
                await run.CheckpointDueAsync();
                run.CheckpointInFlight = true;
                await store.TakeCheckpointAsync(
                    own.Next(3) == 0 ? CheckpointKind.Full : CheckpointKind.LogOnly,
                    own.Next(3) switch
                    {
                        0 => CheckpointMode.FoldOver,
                        1 => CheckpointMode.Snapshot,
                        _ => CheckpointMode.Auto,
                    });
                run.CheckpointInFlight = false;
                run.Committed();
            }
        });

        // The old machine's store finishes what it was doing; none of it reaches the new machine.
        await Task.WhenAll(workers).WaitAsync(Guard);
        run.Release();
        await checkpoints.WaitAsync(Guard);
        Interlocked.Add(ref totals.Operations, run.Issued);
        Interlocked.Add(ref totals.Commits, run.Commits);
        Interlocked.Add(ref totals.CheckpointsInFlight, run.CheckpointInFlightAtCut ? 1 : 0);
        PowerLossWorld next = world.AfterCut!;
        Interlocked.Add(ref totals.LostWrites, next.LostWrites);
        Interlocked.Add(ref totals.CutsInsideStorageOperations, next.CutInsideStorageOperation ? 1 : 0);
        return next;
    }

    /// <summary>When the next checkpoint starts and when the power goes, shared by the session threads and the
    /// checkpoint loop.</summary>
    private sealed class RunState(int commitsBeforeCut, int operationsAfterThem, int operationsBetweenCheckpoints)
    {
        private long _issued;
        private long _issuedAtCommit;
        private long _issuedWhenCutArmed = -1;
        private int _commits;
        private int _cutClaimed;

        public long Issued => Interlocked.Read(ref _issued);

        public int Commits => Volatile.Read(ref _commits);

        public bool CheckpointDue => Issued - Interlocked.Read(ref _issuedAtCommit) >= operationsBetweenCheckpoints;

        // Completed by the operation that makes the next checkpoint due (or by the cut).
        private TaskCompletionSource _due = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task CheckpointDueAsync() => Volatile.Read(ref _due).Task;

        public void Release() => Volatile.Read(ref _due).TrySetResult();

        public volatile bool CheckpointInFlight;

        public bool CheckpointInFlightAtCut;

        /// <summary>Counts an operation; true once the cut is due.</summary>
        public bool OperationDone()
        {
            long issued = Interlocked.Increment(ref _issued);
            if (CheckpointDue)
            {
                Release();
            }

            if (Volatile.Read(ref _commits) < commitsBeforeCut)
            {
                return false;
            }

            long armed = Interlocked.CompareExchange(ref _issuedWhenCutArmed, issued, -1);
            return issued - (armed < 0 ? issued : armed) >= operationsAfterThem;
        }

        public bool TryClaimCut() => Interlocked.Exchange(ref _cutClaimed, 1) == 0;

        public void Committed()
        {
            Volatile.Write(ref _due, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
            Interlocked.Exchange(ref _issuedAtCommit, Issued);
            Interlocked.Increment(ref _commits);
        }
    }

    /// <summary>One session's operations that may have survived, in serial order, and what it was told was durable.</summary>
    private sealed class SessionModel
    {
        private readonly List<(long SerialNo, long Key, char Kind, long Argument)> _operations = new();
        private readonly object _lock = new();
        private CommitPoint _acknowledged = CommitPoint.None;

        // The session's last serial number, reads included: no recovered point may name a later one.
        private long _lastSerialNo;

        public void Acknowledge(CommitPoint point)
        {
            lock (_lock)
            {
                if (point.UntilSerialNo > _acknowledged.UntilSerialNo)
                {
                    _acknowledged = point;
                }
            }
        }

        /// <summary>Keeps the operations the recovered point holds; checks no acknowledged one was lost.</summary>
        public void Recover(CommitPoint point, int session)
        {
            Assert.True(point.UntilSerialNo >= _acknowledged.UntilSerialNo,
                $"session {session}: recovered {point}, but commit {_acknowledged} had been acknowledged as durable");
            long lastIssued = _lastSerialNo;
            Assert.True(point.UntilSerialNo <= Math.Max(lastIssued, _acknowledged.UntilSerialNo),
                $"session {session}: recovered {point} beyond its last operation {lastIssued}");
            var excluded = point.ExcludedSerialNos.ToHashSet();
            _operations.RemoveAll(o => o.SerialNo > point.UntilSerialNo || excluded.Contains(o.SerialNo));
            _acknowledged = CommitPoint.None;
        }

        /// <summary>Every key of the session holds exactly what its surviving operations imply.</summary>
        public void Check(CountSession session, int index)
        {
            var expected = new Dictionary<long, long>();
            foreach ((_, long key, char kind, long argument) in _operations)
            {
                switch (kind)
                {
                    case 'U':
                        expected[key] = argument;
                        break;
                    case 'R':
                        expected[key] = expected.GetValueOrDefault(key) + argument;
                        break;
                    default:
                        expected.Remove(key);
                        break;
                }
            }

            for (int k = 0; k < KeysPerSession; k++)
            {
                long key = KeyOf(index, k);
                (Status status, long value) = session.ReadNow(key);
                _lastSerialNo = session.LastSerialNo;
                if (expected.TryGetValue(key, out long want))
                {
                    Assert.True(status == Status.Ok && value == want,
                        $"session {index}, key {key}: {status} {value}, expected {want} from {Describe(key)}");
                }
                else
                {
                    Assert.True(status == Status.NotFound,
                        $"session {index}, key {key}: {status} {value}, expected absent from {Describe(key)}");
                }
            }
        }

        public void Issue(CountSession session, int index, Random random)
        {
            long key = KeyOf(index, random.Next(KeysPerSession));
            long serialNo = session.NextSerialNo;
            int choice = random.Next(10);
            if (choice < 6)
            {
                long delta = random.Next(1, 100);
                session.RMW(key, delta, new CountContext());
                _operations.Add((serialNo, key, 'R', delta));
            }
            else if (choice < 9)
            {
                long value = random.Next(1, 1_000_000);
                session.Upsert(key, value);
                _operations.Add((serialNo, key, 'U', value));
            }
            else
            {
                session.Delete(key, new CountContext());
                _operations.Add((serialNo, key, 'D', 0));
            }

            Assert.Equal(serialNo, session.LastSerialNo);
            _lastSerialNo = serialNo;
        }

        private string Describe(long key) => string.Join(", ", _operations.Where(o => o.Key == key)
            .Select(o => string.Create(CultureInfo.InvariantCulture, $"{o.SerialNo}:{o.Kind}{o.Argument}")));

        private static long KeyOf(int session, int k) => (session * 1000L) + k;
    }

    private sealed class Totals
    {
        public int Scenarios;
        public long Operations;
        public int Commits;
        public int CheckpointsInFlight;
        public int LostWrites;
        public int CutsInsideStorageOperations;
        public int Recovered;
        public int Empty;
    }
}
