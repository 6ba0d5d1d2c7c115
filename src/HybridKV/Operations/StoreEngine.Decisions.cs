using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// The one place where an update decides, from the record's region and version, whether it may change the record in
/// place. RMW, Upsert and Delete all ask here.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private UpdateDecision DecideUpdate(LogRegion region, RecordHeader header, long address, in SessionView session)
    {
        // A stamp equal to the session's is its version only above the commit start (stamps wrap, see IsOfNextVersion).
        UpdateDecision decision = header.Version != session.RecordVersion || address < session.OlderBelow
            ? DecideAcrossVersions(region, header, address, in session)
            : DecideByRegion(region);

        // Only variable-length values outgrow their record; for fixed-size types the JIT drops this test.
        if (LogRecord<TKey, TValue>.HasVariableValue && decision == UpdateDecision.InPlace && header.Sealed)
        {
            return UpdateDecision.Sealed;
        }

        return decision;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static UpdateDecision DecideByRegion(LogRegion region) => region switch
    {
        LogRegion.Mutable => UpdateDecision.InPlace,
        // A thread with an older view may still update this record in place; a copy made now could miss that
        // update (the lost-update anomaly, FASTER §6.2).
        LogRegion.Fuzzy => UpdateDecision.Wait,
        _ => UpdateDecision.CopyToTail,
    };

    /// <summary>
    /// Whether the record was written by a session already past its CPR point while this one is not (CPR §6.2.1). Read
    /// against the global state, not the session's view: a session with an older view meets such records too.
    /// </summary>
    private bool IsFromNextVersion(RecordHeader header, long address, in SessionView session) =>
        State.SessionVersion > session.Version &&
        IsOfNextVersion(header.Version, session.Version, address, Volatile.Read(ref _commitStartAddress));

    /// <summary>
    /// Whether a record stamped <paramref name="stamp"/> at <paramref name="address"/> was written by version
    /// <paramref name="version"/> + 1. Stamps are 12 bits, so a stamp that reads v + 1 may be 4096 versions old; but
    /// every record of v + 1 lies at or above <paramref name="commitStart"/>, the tail when the commit of v began, and
    /// a record is never more than one version ahead. So the address tells an old record from a new one, for any
    /// number of checkpoints, at run time and in recovery's replay alike.
    /// </summary>
    internal static bool IsOfNextVersion(long stamp, long version, long address, long commitStart) =>
        address >= commitStart && ((stamp - version) & RecordHeader.VersionMask) == 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private UpdateDecision DecideAcrossVersions(LogRegion region, RecordHeader header, long address, in SessionView session)
    {
        if (IsFromNextVersion(header, address, in session))
        {
            return UpdateDecision.CrossVersion;
        }

        if (!session.State.Capturing || region < LogRegion.Fuzzy)
        {
            // At rest every older record is fair game; below the fuzzy region nobody changes it in place anyway.
            return DecideByRegion(region);
        }

        // A record of the version being committed: changing it in place would put a later operation into the commit.
        // While a session may still run as that version it may be changing the record in place right now, so a copy
        // would lose that update; the coarse-grained shift of CPR App. C waits instead of latching the bucket.
        if (session.State.OlderVersionMayRun)
        {
            return UpdateDecision.Wait;
        }

        // Once a snapshot has copied the record's page, the commit has what it needs of it (CPR App. D).
        return Snapshot.Of(address) switch
        {
            SnapshotProgress.Standing.Copied => DecideByRegion(region),
            SnapshotProgress.Standing.Copying => UpdateDecision.Wait,
            _ => UpdateDecision.CopyToTail,
        };
    }
}
