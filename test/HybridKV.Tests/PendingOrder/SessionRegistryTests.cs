using HybridKV.Checkpoints;
using HybridKV.Sessions;

namespace HybridKV.Tests.PendingOrder;

/// <summary>
/// What a checkpoint records of a session that closes while it runs (found by the CPR model with operations piled up
/// on few cold keys): a session that crossed its CPR point with pending operations, then finished them and closed
/// before the sweep collected the points, ran operations of the next version that the next commit must record.
/// </summary>
[Trait("Category", "PendingOrder")]
public sealed class SessionRegistryTests
{
    [Fact]
    public void A_session_that_closes_after_its_CPR_point_is_recorded_again_by_the_next_commit()
    {
        var registry = new SessionRegistry();
        var id = Guid.NewGuid();
        SessionCprState session = registry.Register(id, () => 1, continueRecovered: false, out _);
        for (int i = 0; i < 3; i++)
        {
            session.BeginOperation();
            session.EndOperation();
        }

        session.AddPending(2);

        // Checkpoint of version 1: the sweep crosses the session with operation 2 pending, so excluded.
        Assert.True(registry.TryCrossAll(2, strict: false));

        // The session finishes operation 2 as version 2, runs one more, and closes before the points are collected.
        session.RemovePending(2);
        session.BeginOperation();
        session.EndOperation();
        registry.Close(session, keepForCheckpoint: true);

        IReadOnlyList<SweptSession> first = registry.CollectPoints(2);
        SweptSession swept = Assert.Single(first);
        Assert.Equal(new CommitPoint(3, [2]), swept.Point);
        Assert.False(swept.WasClosed, "the session ran operations after its CPR point");
        registry.OnCommitted(registry.TableWith(first), first);

        // The next checkpoint still knows the session, and records all four operations.
        Assert.True(registry.TryCrossAll(3, strict: false));
        IReadOnlyList<SweptSession> second = registry.CollectPoints(3);
        swept = Assert.Single(second);
        Assert.Equal(new CommitPoint(4, []), swept.Point);
        Assert.True(swept.WasClosed);
        registry.OnCommitted(registry.TableWith(second), second);
        Assert.Equal(new CommitPoint(4, []), registry.CommittedPoints[id]);

        // Recorded with everything it did: the one after that forgets it.
        Assert.True(registry.TryCrossAll(4, strict: false));
        Assert.Empty(registry.CollectPoints(4));
    }
}
