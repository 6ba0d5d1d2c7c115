using System.Runtime.CompilerServices;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// The one place where an update decides, from the record's region and version, whether it may change the record in
/// place. RMW, Upsert and Delete all ask here.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static UpdateDecision DecideUpdate(LogRegion region, RecordHeader header, in SessionView session)
    {
        UpdateDecision decision = header.Version != session.RecordVersion
            ? DecideAcrossVersions(region, header, in session)
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
    /// Whether the record was written by a session already past its CPR point while this one is not. Versions are
    /// stamped modulo 2^13, and a record is at most one version ahead of any session (CPR §6.2.1).
    /// </summary>
    private static bool IsFromNextVersion(RecordHeader header, in SessionView session) =>
        ((header.Version - session.Version) & RecordHeader.VersionMask) == 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static UpdateDecision DecideAcrossVersions(LogRegion region, RecordHeader header, in SessionView session)
    {
        if (IsFromNextVersion(header, in session))
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
        return session.State.OlderVersionMayRun ? UpdateDecision.Wait : UpdateDecision.CopyToTail;
    }
}
