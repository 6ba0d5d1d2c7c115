using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;

namespace HybridKV.Operations;

/// <summary>
/// What one operation knows about the session running it: its epoch row, the CPR version it runs as, and the global
/// CPR state it saw when it entered protection (CPR §6.2: each thread's local view of the state machine).
/// </summary>
internal readonly struct SessionView
{
    public readonly int EpochEntry;
    public readonly long Version;
    public readonly SystemState State;

    /// <summary>
    /// Strict CPR: the session runs as the next version while others may still finish pending operations of the
    /// committed one, so its updates wait (they could otherwise come before those operations on the same key).
    /// </summary>
    public readonly bool WritesDeferred;

    /// <summary>
    /// For a session already past its CPR point while the commit captures the version before: the commit's start
    /// address, below which a record whose stamp equals the session's is an old one (stamps wrap); otherwise 0.
    /// </summary>
    public readonly long OlderBelow;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public SessionView(int epochEntry, long version, SystemState state, bool strictCpr, long commitStart)
    {
        OlderBelow = state.Capturing && version > state.Version ? commitStart : 0;
        EpochEntry = epochEntry;
        Version = version;
        State = state;
        WritesDeferred = strictCpr && version > state.Version &&
                         state.Phase is CprPhase.InProgress or CprPhase.WaitPending;
    }

    /// <summary>The version bits stamped into the records this operation writes.</summary>
    public long RecordVersion
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Version & Log.RecordHeader.VersionMask;
    }
}
