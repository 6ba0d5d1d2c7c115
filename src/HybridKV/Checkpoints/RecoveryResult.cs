namespace HybridKV.Checkpoints;

/// <summary>What <c>RecoverAsync</c> restored.</summary>
/// <param name="Token">The checkpoint recovered.</param>
/// <param name="Version">Its CPR version; the store continues at the next one.</param>
/// <param name="Kind">Full or log-only.</param>
/// <param name="Mode">Fold-over or snapshot.</param>
/// <param name="BeginAddress">The recovered log's begin address.</param>
/// <param name="TailAddress">The recovered log's tail address: new records go after it.</param>
/// <param name="RecordsReplayed">Records replayed into the index between the index checkpoint and the tail.</param>
/// <param name="Sessions">Every session's recovered commit point; <c>ContinueSession</c> hands them out.</param>
/// <param name="Skipped">Newer checkpoints that were passed over, each with the file at fault and why.</param>
/// <param name="Duration">How long recovery took.</param>
public sealed record RecoveryResult(
    Guid Token,
    long Version,
    CheckpointKind Kind,
    CheckpointMode Mode,
    long BeginAddress,
    long TailAddress,
    long RecordsReplayed,
    IReadOnlyDictionary<Guid, CommitPoint> Sessions,
    IReadOnlyList<string> Skipped,
    TimeSpan Duration);

/// <summary>How far recovery's replay of the log has come.</summary>
/// <param name="ReplayedBytes">Bytes of log replayed so far.</param>
/// <param name="TotalBytes">Bytes of log to replay in all.</param>
public readonly record struct RecoveryProgress(long ReplayedBytes, long TotalBytes);
