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

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public SessionView(int epochEntry, long version, SystemState state)
    {
        EpochEntry = epochEntry;
        Version = version;
        State = state;
    }

    /// <summary>The version bits stamped into the records this operation writes.</summary>
    public long RecordVersion
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Version & Log.RecordHeader.VersionMask;
    }
}
