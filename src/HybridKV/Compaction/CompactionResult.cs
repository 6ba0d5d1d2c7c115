namespace HybridKV;

/// <summary>What one compaction of the log did.</summary>
/// <param name="FromAddress">The begin address before it: the first address it examined.</param>
/// <param name="UntilAddress">The end of the range it compacted: the log's begin address after it.</param>
/// <param name="RecordsExamined">Valid records in the range.</param>
/// <param name="RecordsCopied">Live records copied to the tail.</param>
/// <param name="BytesCopied">The bytes of those records.</param>
/// <param name="TombstonesDropped">Delete markers, and values expired as compaction read them, dropped with the range.</param>
public sealed record CompactionResult(
    long FromAddress,
    long UntilAddress,
    long RecordsExamined,
    long RecordsCopied,
    long BytesCopied,
    long TombstonesDropped)
{
    /// <summary>Index entries emptied because their whole chain lay below the new begin address.</summary>
    public long IndexEntriesReclaimed { get; init; }
}
