namespace HybridKV.Checkpoints;

/// <summary>What a checkpoint captures (CPR §6.2–6.3).</summary>
public enum CheckpointKind
{
    /// <summary>A fuzzy checkpoint of the hash index, then a CPR commit of the log. Recovery replays the log only from
    /// where the index checkpoint started.</summary>
    Full,

    /// <summary>Only a CPR commit of the log. Recovery uses the newest full checkpoint's index and replays the log
    /// from there (or rebuilds the index from the whole log when there is none). Cheap and frequent.</summary>
    LogOnly,
}

/// <summary>How the log's records of the committed version are made durable (CPR App. D).</summary>
public enum CheckpointMode
{
    /// <summary>Moves the read-only offset to the tail, so that the log device holds every record of the version:
    /// incremental (only what changed since the last commit is written), but every update of an older record copies
    /// it to the tail afterwards.</summary>
    FoldOver,

    /// <summary>Writes the in-memory part of the log to a snapshot part of the checkpoint, leaving the mutable region
    /// where it was: in-place updates resume as soon as the snapshot is written, at the price of writing the whole
    /// mutable region each time.</summary>
    Snapshot,

    /// <summary>Chooses <see cref="FoldOver"/> or <see cref="Snapshot"/> for each checkpoint: a snapshot when operations
    /// read more bytes from the log device since the previous checkpoint than the snapshot would write (the store is
    /// larger than its memory, where a fold-over's copies push live records out of memory), a fold-over otherwise.
    /// The checkpoint records the mode it used.</summary>
    Auto,
}
