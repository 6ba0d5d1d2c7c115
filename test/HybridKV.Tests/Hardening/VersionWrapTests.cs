using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// Record versions are stamped in 12 bits (issue 16, item 1). Over more than 4096 checkpoints a record written in one
/// of the first versions carries the stamp of a later version's successor: an update of it at exactly that version must
/// not take it for a record of the next version (it would retry forever), and a replay across all those versions must
/// not undo it.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class VersionWrapTests
{
    private const int Versions = (int)HybridKV.Log.RecordHeader.VersionMask + 1;
    private const int ColdKeys = 200;
    private const long UntouchedKey = 150;

    [Fact]
    public async Task Records_of_the_first_versions_stay_right_across_more_than_20000_checkpoints_and_recovery()
    {
        using var device = new MemoryDevice(512, 1L << 20);
        using var checkpoints = new MemoryCheckpointStore();
        StoreSettings settings = StoreOnDevice.Settings(device: device) with
        {
            CheckpointStore = checkpoints,
            CheckpointsToKeep = 2,
            MemorySizeBytes = 1L << 20,
        };
        var model = new Dictionary<long, long>();
        long version = 1;
        int touchedAtCollision = 0;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession())
        {
            async Task CheckpointAsync(CheckpointKind kind)
            {
                await store.TakeCheckpointAsync(kind, CheckpointMode.FoldOver);
                version++;
            }

            // The index of this full checkpoint is the one recovery starts from: it replays everything after it.
            await CheckpointAsync(CheckpointKind.Full);

            // Cold key k is written in version k + 2, one version each.
            for (long k = 0; k < ColdKeys; k++)
            {
                session.Upsert(k, k);
                model[k] = k;
                await CheckpointAsync(CheckpointKind.LogOnly);
            }

            // The loop stops at version V + 1, V being the last committed one; cold key 150, never touched again, is
            // stamped 152, which must read V + 1 to a replay that does not tell old records from new ones.
            long last = ((20_000 / Versions) + 1) * Versions + UntouchedKey + 2;
            await Task.Run(async () =>
            {
                var random = new Random(16);
                while (version < last)
                {
                    long hot = 1_000 + random.Next(50);
                    session.RMW(hot, 1);
                    model[hot] = model.GetValueOrDefault(hot) + 1;

                    // A cold key whose stamp reads "next version" to this version: its first update since then.
                    long cold = version - 1 - Versions;
                    if (cold is >= 0 and < ColdKeys && cold != UntouchedKey && cold % 4 != 3)
                    {
                        Touch(session, model, cold, version);
                        touchedAtCollision++;
                    }

                    await CheckpointAsync(CheckpointKind.LogOnly);
                }
            }).WaitAsync(TimeSpan.FromMinutes(5));

            Assert.True(touchedAtCollision > 100, $"only {touchedAtCollision} cold keys were updated at their colliding version");
            Assert.True(session.CompletePending(wait: true));
            AssertMatches(session, model);
        }

        using var recovered = StoreOnDevice.Create(settings);
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.Equal(version - 1, result!.Version);
        using var reader = recovered.NewSession();
        AssertMatches(reader, model);
    }

    private static void Touch(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session, Dictionary<long, long> model,
        long key, long version)
    {
        switch (key % 4)
        {
            case 0:
                Assert.Equal(Status.Ok, session.RMWNow(key, 10));
                model[key] += 10;
                break;
            case 1:
                Assert.Equal(Status.Ok, session.Upsert(key, version));
                model[key] = version;
                break;
            default:
                Assert.Equal(Status.Ok, session.DeleteNow(key));
                model.Remove(key);
                break;
        }
    }

    private static void AssertMatches(
        HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session, Dictionary<long, long> model)
    {
        var wrong = new List<string>();
        foreach (long key in Enumerable.Range(0, ColdKeys).Select(k => (long)k).Concat(Enumerable.Range(1_000, 50).Select(k => (long)k)))
        {
            (Status status, long value) = session.ReadNow(key);
            (Status, long) expected = model.TryGetValue(key, out long v) ? (Status.Ok, v) : (Status.NotFound, 0);
            if ((status, value) != expected)
            {
                wrong.Add($"{key}: {status} {value}, expected {expected}");
            }
        }

        Assert.True(wrong.Count == 0, string.Join("; ", wrong));
    }
}
