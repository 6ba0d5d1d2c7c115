using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Bringing hot records read from the device back into memory (FASTER's copy of reads to the tail, admitted only on a
/// second read, as a TinyLFU doorkeeper admits): a read that found its key's newest record on the device appends a copy
/// at the tail when the key was read from the device recently too (<see cref="Caching.HotReadFilter"/>), so the next
/// reads of a hot key find it in memory. The copy holds the same value and is linked only while the index still leads
/// to the record read, so it never hides a newer update; it is skipped, never waited for, when the tail has no room.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    private long _hotReadsCopied;

    /// <summary>Records that reads from the device copied to the tail since the store opened.</summary>
    public long HotReadsCopied => Volatile.Read(ref _hotReadsCopied);

    /// <summary>
    /// After a read decided from <paramref name="record"/>, the live newest record of its key read from the device:
    /// copies it to the tail if the key is hot. The chain from the entry the read started at down to the record held
    /// no other record of the key (the read followed it), which is what the conditional copy needs to know.
    /// </summary>
    private void CopyIfHot(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, LogRecord<TKey, TValue> record,
        in SessionView session)
    {
        // A read that shared another's device read is not a device read of its own: the owner counted it.
        if (_hotReads is null || operation.SharedRead || !_hotReads.ReadAgain(operation.KeyHash))
        {
            return;
        }

        if (ConditionalCopyFromDevice(record, operation.Storage.RecordAddress, operation.Storage.EntryAddress,
                session.EpochEntry) == CopyForwardOutcome.Copied)
        {
            Interlocked.Increment(ref _hotReadsCopied);
        }
    }
}
