using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// Decides the mode of a <see cref="CheckpointMode.Auto"/> checkpoint from what operations did since the previous
/// checkpoint. A fold-over writes only what changed, but makes the next update of every record below the tail a copy
/// (CPR App. D): the log grows by the records updated, and when the store is larger than its memory the head runs
/// ahead and pushes live records out of memory sooner, so more operations wait for the device. A snapshot leaves
/// updates in place and writes the mutable region instead. Operations that read more from the device than a snapshot
/// would write say the store misses its memory, and the snapshot is the cheaper of the two; a store that fits in memory
/// reads nothing, and its fold-over's copies stay in memory (the memory compaction keeps them).
/// </summary>
/// <param name="bytesReadByOperations">Bytes operations have read from the device since the store opened.</param>
/// <param name="log">The log whose mutable region a snapshot would write.</param>
internal sealed class CheckpointModeChoice(Func<long> bytesReadByOperations, HybridLog log)
{
    // Only the checkpoint state machine calls, one checkpoint at a time.
    private long _readAtLastCheckpoint;

    /// <summary>
    /// Called as each checkpoint starts, whatever its mode, so that the next choice looks at one interval only.
    /// </summary>
    /// <returns><paramref name="requested"/>, or for <see cref="CheckpointMode.Auto"/> the mode chosen, with the figures
    /// it was chosen on.</returns>
    public Choice Resolve(CheckpointMode requested)
    {
        long read = bytesReadByOperations();
        long readSince = read - _readAtLastCheckpoint;
        _readAtLastCheckpoint = read;
        long snapshotBytes = Math.Max(0, log.TailAddress - log.SafeReadOnlyAddress);
        CheckpointMode mode = requested != CheckpointMode.Auto ? requested
            : readSince > snapshotBytes ? CheckpointMode.Snapshot
            : CheckpointMode.FoldOver;
        return new Choice(mode, readSince, snapshotBytes);
    }

    /// <summary>A resolved mode, and the bytes read by operations and a snapshot's size it was decided on.</summary>
    public readonly record struct Choice(CheckpointMode Mode, long BytesReadSinceLast, long SnapshotBytes);
}
