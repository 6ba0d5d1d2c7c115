namespace HybridKV.Checkpoints;

/// <summary>Checkpoints committed by this store, by the mode that captured the log (for the store's meter).</summary>
internal sealed class CheckpointCounts
{
    private long _foldOvers;
    private long _snapshots;

    public long FoldOvers => Volatile.Read(ref _foldOvers);

    public long Snapshots => Volatile.Read(ref _snapshots);

    public void OnCommitted(CheckpointMode mode)
    {
        if (mode == CheckpointMode.Snapshot)
        {
            Interlocked.Increment(ref _snapshots);
        }
        else
        {
            Interlocked.Increment(ref _foldOvers);
        }
    }
}
