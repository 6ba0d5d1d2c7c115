using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read-modify-write (FASTER Alg. 4 and Table 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRMW(in TKey key, in TInput input, int epochEntry, out StorageRead storageRead)
    {
        storageRead = default;
        IndexSlot slot = Index.FindOrCreateEntry(HashOf(in key));
        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        LogRegion region = view.Classify(address);
        if (region == LogRegion.None)
        {
            return CreateInitialRecord(ref slot, in key, in input, epochEntry);
        }

        if (region == LogRegion.OnStorage)
        {
            storageRead = new StorageRead(address, slot.Address);
            return OperationStatus.RecordOnStorage;
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        if (record.Header.Tombstone)
        {
            // Deleted: nobody updates a tombstone in place, so starting a fresh value at the tail loses nothing.
            return CreateInitialRecord(ref slot, in key, in input, epochEntry);
        }

        switch (region)
        {
            case LogRegion.Mutable:
                _functions.InPlaceUpdater(in key, in input, ref record.Value);
                return OperationStatus.Success;

            case LogRegion.Fuzzy:
                // A thread with an older view may still update this record in place; a copy made now could miss that
                // update (the lost-update anomaly, FASTER §6.2). Wait until the region is safely read-only.
                return OperationStatus.Pending;

            default:
                return CopyUpdateRecord(ref slot, in key, in input, address, epochEntry);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CreateInitialRecord(ref IndexSlot slot, in TKey key, in TInput input, int epochEntry)
    {
        if (!TryAppendRecord(in key, slot.Address, tombstone: false, epochEntry, out long address,
                out LogRecord<TKey, TValue> record))
        {
            return OperationStatus.RetryLater;
        }

        _functions.InitialUpdater(in key, in input, ref record.Value);
        return LinkRecord(ref slot, address, record);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CopyUpdateRecord(
        ref IndexSlot slot, in TKey key, in TInput input, long sourceAddress, int epochEntry)
    {
        if (!TryAppendRecord(in key, slot.Address, tombstone: false, epochEntry, out long address,
                out LogRecord<TKey, TValue> record))
        {
            return OperationStatus.RetryLater;
        }

        if (sourceAddress < Log.HeadAddress)
        {
            // The allocation refreshed this thread's epoch while it waited for a page turn, and the source record
            // has left memory since: start over rather than read a frame that may hold another page now.
            record.Header.SetInvalid();
            return OperationStatus.RetryNow;
        }

        LogRecord<TKey, TValue> source = Log.GetRecord<TKey, TValue>(sourceAddress);
        _functions.CopyUpdater(in key, in input, in source.Value, ref record.Value);
        return LinkRecord(ref slot, address, record);
    }
}
