using HybridKV.Epochs;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// What a checkpoint kind does before the log commit: a full checkpoint copies the index fuzzily (CPR §6.3), a
/// log-only one refers to the last index copied (recovery replays the log from it).
/// </summary>
/// <param name="log">The log, whose tail brackets the copy.</param>
/// <param name="epoch">The store's epoch framework.</param>
/// <param name="index">The index now (recovery replaces it).</param>
internal sealed class IndexCapture(HybridLog log, LightEpoch epoch, Func<HashIndex> index)
{
    // The index checkpoint that log-only checkpoints refer to: the last full checkpoint's, once it has committed.
    private IndexCheckpointMetadata? _last;

    /// <summary>Recovery hands over the index checkpoint that later log-only checkpoints refer to.</summary>
    public void OnRecovered(IndexCheckpointMetadata? last) => _last = last;

    /// <summary>Remembers a committed full checkpoint's index, for the log-only checkpoints after it.</summary>
    public void OnCommitted(CheckpointKind kind, IndexCheckpointMetadata? index)
    {
        if (kind == CheckpointKind.Full)
        {
            _last = index;
        }
    }

    /// <summary>The index checkpoint this checkpoint's recovery starts from (null: rebuild from the log).</summary>
    public Task<IndexCheckpointMetadata?> CaptureAsync(
        CheckpointKind kind, CheckpointWriter writer, CancellationToken cancellationToken) =>
        kind == CheckpointKind.Full ? WriteAsync(writer, cancellationToken)! : Task.FromResult(_last);

    /// <summary>
    /// The fuzzy index checkpoint: the start address is taken, then every operation that might have allocated below
    /// it is waited out, so that each of their records is either linked in the copied index or found by the replay
    /// from the start address. The state machine holds the index's structure for the whole checkpoint
    /// (<see cref="HashIndex.LockStructureAsync"/>), so the copy is of one table, of the size its header records.
    /// </summary>
    private async Task<IndexCheckpointMetadata?> WriteAsync(CheckpointWriter writer, CancellationToken cancellationToken)
    {
        long start = log.TailAddress;
        await epoch.WaitUntilSafeAsync(epoch.CurrentEpoch, cancellationToken).ConfigureAwait(false);
        HashIndex current = index();
        await writer.WritePartAsync(CheckpointMetadata.IndexPart,
            (stream, token) => current.WriteCheckpointAsync(stream, token), cancellationToken).ConfigureAwait(false);
        return new IndexCheckpointMetadata(writer.Token, start, log.TailAddress);
    }
}
