using System.Text.Json;
using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// The session table stays bounded by the sessions in use (issue 16, item 8): a service that opens a session per
/// request must not grow memory or checkpoint manifests without bound, while <c>ContinueSession</c> still hands out the
/// point of every session the latest commit names.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class SessionTableTests
{
    private static StoreSettings Settings(MemoryDevice device, MemoryCheckpointStore checkpoints) =>
        StoreOnDevice.Settings(device: device) with
        {
            CheckpointStore = checkpoints,
            CheckpointsToKeep = 1,
            MemorySizeBytes = 1L << 22,
        };

    [Fact]
    public async Task A_million_sessions_opened_and_disposed_leave_neither_memory_nor_manifests_behind()
    {
        const int Sessions = 1_000_000;
        const int PerCheckpoint = 50_000;
        using var device = new MemoryDevice(512, 1L << 24);
        using var checkpoints = new MemoryCheckpointStore();
        using var store = StoreOnDevice.Create(Settings(device, checkpoints));
        using var keeper = store.NewSession();
        int largestTable = 0;

        await Task.Run(async () =>
        {
            for (int i = 1; i <= Sessions; i++)
            {
                using (var perRequest = store.NewSession())
                {
                    perRequest.Upsert(i % 1_000, i);
                }

                if (i % PerCheckpoint == 0)
                {
                    keeper.Upsert(-1, i);
                    Guid token = await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
                    IReadOnlyList<Guid> named = await SessionsNamedByAsync(checkpoints, token);
                    largestTable = Math.Max(largestTable, named.Count);

                    // The sessions disposed since the last commit, with their final points, and the one still open.
                    Assert.InRange(named.Count, 1, PerCheckpoint + 1);
                    Assert.Contains(keeper.Id, named);
                    Assert.Equal(1, store.SessionTable.LiveCount);
                }
            }
        }).WaitAsync(TimeSpan.FromMinutes(5));

        // With nobody coming and going, the next commit names the open session only.
        Guid last = await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
        Assert.Equal([keeper.Id], await SessionsNamedByAsync(checkpoints, last));
        Assert.Equal(1, store.SessionTable.LiveCount);
        Assert.InRange(largestTable, PerCheckpoint, PerCheckpoint + 1);
    }

    [Fact]
    public async Task Disposed_sessions_leave_the_table_after_one_commit_and_recovery_hands_out_every_point_it_names()
    {
        using var device = new MemoryDevice(512, 1L << 24);
        using var checkpoints = new MemoryCheckpointStore();
        StoreSettings settings = Settings(device, checkpoints);
        Guid open = Guid.NewGuid(), closedLate = Guid.NewGuid(), closedDurable = Guid.NewGuid();
        Guid first;
        using (var store = StoreOnDevice.Create(settings))
        {
            var a = store.NewSession(open);
            var c = store.NewSession(closedDurable);
            Issue(a, 3);
            Issue(c, 2);
            first = await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
            Assert.Equal(new CommitPoint(2, []), c.DurableCommitPoint);

            // Everything it did is durable: it leaves at once, and the commit that named it still hands its point out.
            c.Dispose();
            Assert.Equal(1, store.SessionTable.LiveCount);
            using (var again = store.ContinueSession(closedDurable, out CommitPoint point))
            {
                Assert.Equal(new CommitPoint(2, []), point);
                Assert.Equal(3, again.NextSerialNo);
            }

            // Disposed with operations no commit holds: kept until the next commit records its final point.
            using (var b = store.NewSession(closedLate))
            {
                Issue(b, 4);
            }

            Assert.Equal(2, store.SessionTable.LiveCount);
            Guid second = await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
            Assert.Equal(new[] { open, closedLate }.Order(), (await SessionsNamedByAsync(checkpoints, second)).Order());
            Assert.Equal(1, store.SessionTable.LiveCount);
            a.Dispose();
        }

        // Recovery from the second commit: the sessions it names continue where they stopped, the one it left out
        // starts over.
        using (var store = StoreOnDevice.Create(settings))
        {
            RecoveryResult result = (await store.RecoverAsync())!;
            Assert.NotEqual(first, result.Token);
            Assert.Equal(new CommitPoint(3, []), result.Sessions[open]);
            Assert.Equal(new CommitPoint(4, []), result.Sessions[closedLate]);
            Assert.False(result.Sessions.ContainsKey(closedDurable));
            using (var b = store.ContinueSession(closedLate, out CommitPoint point))
            {
                Assert.Equal(new CommitPoint(4, []), point);
            }

            using (var c = store.ContinueSession(closedDurable, out CommitPoint point))
            {
                Assert.Equal(CommitPoint.None, point);
            }

            // The next commit keeps the session that was open at the crash (it may still be continued), and drops the
            // one whose final point the recovered commit recorded.
            Guid third = await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver);
            Assert.Equal([open], await SessionsNamedByAsync(checkpoints, third));
        }

        using (var store = StoreOnDevice.Create(settings))
        {
            RecoveryResult result = (await store.RecoverAsync())!;
            Assert.Equal([open], result.Sessions.Keys);
            using var a = store.ContinueSession(open, out CommitPoint point);
            Assert.Equal(new CommitPoint(3, []), point);
            Assert.Equal(4, a.NextSerialNo);
            Assert.Equal((Status.Ok, 2L), a.ReadNow(2));
        }
    }

    private static void Issue(HybridKV.Sessions.Session<long, long, long, long, CountContext?, CountFunctions> session, int count)
    {
        for (int i = 1; i <= count; i++)
        {
            Assert.Equal(Status.Ok, session.Upsert(i, i));
        }
    }

    /// <summary>The sessions a commit's manifest names, read from the bytes it wrote.</summary>
    private static async Task<IReadOnlyList<Guid>> SessionsNamedByAsync(MemoryCheckpointStore checkpoints, Guid token)
    {
        using JsonDocument manifest = JsonDocument.Parse(await checkpoints.ReadManifestAsync(token, CancellationToken.None));
        JsonElement sessions = Find(manifest.RootElement, "sessions")
            ?? throw new InvalidOperationException($"The manifest of {token} has no session table.");
        return sessions.EnumerateArray().Select(s => s.GetProperty("id").GetGuid()).ToList();
    }

    private static JsonElement? Find(JsonElement element, string name)
    {
        if (element.ValueKind != JsonValueKind.Object)
        {
            return null;
        }

        foreach (JsonProperty property in element.EnumerateObject())
        {
            if (property.NameEquals(name))
            {
                return property.Value;
            }

            if (Find(property.Value, name) is JsonElement found)
            {
                return found;
            }
        }

        return null;
    }
}
