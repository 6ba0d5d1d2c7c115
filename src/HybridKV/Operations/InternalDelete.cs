using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Delete: a tombstone, in place in the mutable region, appended below it (FASTER §4 and §5.3).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalDelete(in TKey key, int epochEntry, out StorageRead storageRead)
    {
        storageRead = default;
        if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot))
        {
            return OperationStatus.NotFound;
        }

        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        LogRegion region = view.Classify(address);
        if (region == LogRegion.None)
        {
            return OperationStatus.NotFound;
        }

        if (region == LogRegion.OnStorage)
        {
            // Read the record first, so that the status says whether the key existed.
            storageRead = new StorageRead(address, slot.Address);
            return OperationStatus.RecordOnStorage;
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        if (record.Header.Tombstone)
        {
            return OperationStatus.NotFound;
        }

        if (region == LogRegion.Mutable)
        {
            record.Header.SetTombstone();
            return OperationStatus.Success;
        }

        return AppendTombstone(ref slot, in key, epochEntry);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus AppendTombstone(ref IndexSlot slot, in TKey key, int epochEntry)
    {
        // Like an upsert, the tombstone shadows the older record from the tail.
        if (!TryAppendRecord(in key, slot.Address, tombstone: true, epochEntry, out long newAddress,
                out LogRecord<TKey, TValue> tombstone))
        {
            return OperationStatus.RetryLater;
        }

        return LinkRecord(ref slot, newAddress, tombstone);
    }
}
