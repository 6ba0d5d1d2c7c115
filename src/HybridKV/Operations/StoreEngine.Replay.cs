using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Recovery's replay of the log into the index (CPR §6.4, Algorithm 3), one record at a time.</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>
    /// Applies one record found between the replay bounds, in address order, to the index: a record of the recovered
    /// version or older becomes the head of its chain; a record of the next version is marked invalid, and if the
    /// index points at or past it, the entry falls back to the record before it (the undo of Algorithm 3).
    /// Runs before any session exists.
    /// </summary>
    /// <returns>Whether the record was changed (marked invalid), so that its page must be written back.</returns>
    public bool ReplayRecord(LogRecord<TKey, TValue> record, long address, long recoveredVersion, long commitStart)
    {
        RecordHeader header = record.Header;
        if (header.IsNull || header.Invalid)
        {
            // Space reserved but never written, or a record that lost its index race: in no chain.
            return false;
        }

        VarBytes scratch = default;
        ref TKey key = ref record.KeyRef(ref scratch);
        if (!IsOfNextVersion(header.Version, recoveredVersion, address, commitStart))
        {
            IndexSlot slot = Index.FindOrCreateEntry(HashOf(in key));
            Index.TryUpdateEntry(ref slot, address);
            return false;
        }

        record.Header.SetInvalid();
        if (Index.TryFindEntry(HashOf(in key), out IndexSlot current) && current.Address >= address)
        {
            Index.TryUpdateEntry(ref current, header.PreviousAddress);
        }

        return true;
    }
}
