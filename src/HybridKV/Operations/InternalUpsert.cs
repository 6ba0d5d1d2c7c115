using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Upsert, a blind update (FASTER Alg. 3 and Table 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalUpsert(in TKey key, in TValue value, int epochEntry)
    {
        IndexSlot slot = Index.FindOrCreateEntry(HashOf(in key));
        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        if (view.Classify(address) == LogRegion.Mutable)
        {
            LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
            if (!record.Header.Tombstone)
            {
                _functions.ConcurrentWriter(in key, in value, ref record.Value);
                return OperationStatus.Success;
            }
        }

        // Below the mutable region (or deleted): a blind update needs no old value, so it never waits for the fuzzy
        // region or for storage; the newer record simply shadows the older one.
        return AppendUpsert(ref slot, in key, in value, epochEntry);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus AppendUpsert(ref IndexSlot slot, in TKey key, in TValue value, int epochEntry)
    {
        if (!TryAppendRecord(in key, slot.Address, tombstone: false, epochEntry, out long address,
                out LogRecord<TKey, TValue> record))
        {
            return OperationStatus.RetryLater;
        }

        _functions.SingleWriter(in key, in value, ref record.Value);
        return LinkRecord(ref slot, address, record);
    }
}
