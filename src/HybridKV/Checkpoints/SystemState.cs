using System.Runtime.CompilerServices;

namespace HybridKV.Checkpoints;

/// <summary>
/// The global CPR state, phase and version, in one word so that a session reads both with one load (CPR §6.2).
/// The version is the one the state machine is committing: in <see cref="CprPhase.Rest"/> it is the version every
/// session runs as; from <see cref="CprPhase.InProgress"/> on, sessions run as <see cref="Version"/> + 1.
/// </summary>
internal readonly record struct SystemState(CprPhase Phase, long Version)
{
    private const int PhaseBits = 8;

    public long Word => (Version << PhaseBits) | (long)Phase;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static SystemState FromWord(long word) => new((CprPhase)(word & 0xFF), word >> PhaseBits);

    /// <summary>The version a session must run as once it has seen this state.</summary>
    public long SessionVersion
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Phase >= CprPhase.InProgress ? Version + 1 : Version;
    }

    /// <summary>Whether records of the committing version must not change in place (they are being captured).</summary>
    public bool Capturing => Phase >= CprPhase.InProgress;

    /// <summary>Whether a session may still be running as the committing version (CPR App. C).</summary>
    public bool OlderVersionMayRun => Phase <= CprPhase.InProgress;
}
