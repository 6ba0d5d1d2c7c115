namespace HybridKV.Operations;

/// <summary>What an update may do with the newest in-memory record of its key (FASTER Table 2, CPR App. B–C).</summary>
internal enum UpdateDecision : byte
{
    /// <summary>Change the record where it is.</summary>
    InPlace,

    /// <summary>Leave the record alone and append the new value at the tail.</summary>
    CopyToTail,

    /// <summary>Neither is safe yet: another thread may still change the record in place. Retry later.</summary>
    Wait,

    /// <summary>The record belongs to a newer CPR version than the session: the session must cross its CPR point
    /// and run the operation as that version.</summary>
    CrossVersion,

    /// <summary>
    /// The record would be updated in place but is sealed: a variable-length value outgrew it, and it does not change
    /// in place any more (it was sealed under its value lock). Blind updates append; an RMW copies it.
    /// </summary>
    Sealed,
}
