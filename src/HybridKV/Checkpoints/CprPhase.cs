namespace HybridKV.Checkpoints;

/// <summary>The phases of the CPR state machine for FASTER (CPR §6.2, Fig. 9a).</summary>
public enum CprPhase
{
    /// <summary>Normal processing at the current version.</summary>
    Rest = 0,

    /// <summary>Sessions still run as version v; operations accepted now belong to the commit.</summary>
    Prepare = 1,

    /// <summary>Each session crosses its CPR point and runs as v + 1; records of version v are no longer updated in
    /// place.</summary>
    InProgress = 2,

    /// <summary>Every session runs as v + 1; with strict CPR, the v operations still pending are finished.</summary>
    WaitPending = 3,

    /// <summary>The v records are written out: by flushing the log (fold-over) or to a snapshot part.</summary>
    WaitFlush = 4,
}
