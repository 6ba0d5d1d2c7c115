namespace HybridKV.Checkpoints;

/// <summary>
/// What a committed checkpoint records about the store, as JSON in its manifest: enough for recovery (CPR §6.4) to
/// rebuild the index, find the log's bounds, and tell every session its commit point.
/// </summary>
/// <param name="Format">The layout of this record; recovery refuses formats it does not know.</param>
/// <param name="Version">The CPR version v committed: records of version v + 1 are undone.</param>
/// <param name="Kind">Full or log-only.</param>
/// <param name="Mode">Fold-over or snapshot.</param>
/// <param name="BeginAddress">The log's begin address.</param>
/// <param name="StartAddress">The tail when the log commit started (L_s^h).</param>
/// <param name="FinalAddress">The tail once every session had crossed (L_e^h): every v record lies below it.</param>
/// <param name="SnapshotStartAddress">For a snapshot, where the snapshot part starts (a page boundary); below it the
/// log device holds the log. Equal to <paramref name="FinalAddress"/> for a fold-over.</param>
/// <param name="Index">The index checkpoint recovery starts from, or null to rebuild the index from the log.</param>
/// <param name="Sessions">Every session's commit point.</param>
/// <param name="Identity">The store and log the checkpoint belongs to, and how its bytes are to be read.</param>
/// <param name="IndexBuckets">The index's size while the commit ran (no resize runs during a checkpoint): every record
/// below the final address was linked into a table of at most this many buckets, so recovery grows the index it loads
/// to this size before it replays (a split chain cannot be replayed into a smaller table). Null in checkpoints written
/// before the index could grow.</param>
internal sealed record CheckpointMetadata(
    int Format,
    long Version,
    CheckpointKind Kind,
    CheckpointMode Mode,
    long BeginAddress,
    long StartAddress,
    long FinalAddress,
    long SnapshotStartAddress,
    IndexCheckpointMetadata? Index,
    IReadOnlyList<SessionCommitMetadata> Sessions,
    StoreIdentity Identity,
    long? IndexBuckets = null)
{
    /// <summary>The format of this record; the same as the store's on-disk format.</summary>
    public const int CurrentFormat = StoreIdentity.CurrentFormat;

    /// <summary>How checkpoint metadata and the device label are written.</summary>
    internal static readonly System.Text.Json.JsonSerializerOptions JsonOptions = new(System.Text.Json.JsonSerializerDefaults.Web)
    {
        Converters = { new System.Text.Json.Serialization.JsonStringEnumConverter() },
    };

    public const string IndexPart = "index";
    public const string SnapshotPart = "snapshot";
}

/// <summary>A fuzzy index checkpoint and the tail before and after it (L_s^i, L_e^i; CPR §6.3).</summary>
/// <param name="Token">The checkpoint holding the index part (this one, or an earlier full checkpoint).</param>
/// <param name="StartAddress">The tail before the index was copied: replay starts here.</param>
/// <param name="EndAddress">The tail after the index was copied.</param>
internal sealed record IndexCheckpointMetadata(Guid Token, long StartAddress, long EndAddress);

/// <summary>One session's commit point.</summary>
/// <param name="Id">The session's identity.</param>
/// <param name="UntilSerialNo">Its operations up to this serial number are in the commit, except the excluded ones.</param>
/// <param name="ExcludedSerialNos">Operations up to <paramref name="UntilSerialNo"/> that are not in the commit.</param>
/// <param name="Closed">The session was disposed before its CPR point: this is its final point, and the next
/// checkpoint no longer names it (the session table stays bounded by the sessions still in use).</param>
internal sealed record SessionCommitMetadata(Guid Id, long UntilSerialNo, long[] ExcludedSerialNos, bool Closed = false)
{
    public CommitPoint ToCommitPoint() => new(UntilSerialNo, ExcludedSerialNos);
}
