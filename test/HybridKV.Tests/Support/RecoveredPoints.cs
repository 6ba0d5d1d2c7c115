using HybridKV.Checkpoints;

namespace HybridKV.Tests.Support;

/// <summary>What a model test expects of a session after recovery.</summary>
public static class RecoveredPoints
{
    /// <summary>
    /// The session's recovered point: the one the recovered commit names or, for a session it no longer names
    /// (disposed with everything durable, see the session table), the final point the last commit reported to it,
    /// which must then hold every operation up to <paramref name="lastSerialNo"/> (0: it issued none).
    /// </summary>
    public static CommitPoint Of(
        IReadOnlyDictionary<Guid, CommitPoint> recovered, Guid id, CommitPoint? reported, long lastSerialNo)
    {
        if (recovered.TryGetValue(id, out CommitPoint? named))
        {
            return named;
        }

        Assert.True(reported is null || lastSerialNo == 0 ||
                    (reported.UntilSerialNo == lastSerialNo && reported.ExcludedSerialNos.Count == 0),
            $"session {id} left the session table at {reported} before its last operation {lastSerialNo} was durable");
        return reported ?? CommitPoint.None;
    }
}
