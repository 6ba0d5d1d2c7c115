using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read-modify-write (FASTER Alg. 4 and Table 2; CPR App. B–C).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRMW(in TKey key, in TInput input, in SessionView session, out StorageRead storageRead)
    {
        storageRead = default;
        if (session.WritesDeferred)
        {
            return OperationStatus.Pending;
        }

        IndexSlot slot = Index.FindOrCreateEntry(HashOf(in key));
        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        LogRegion region = view.Classify(address);
        if (region == LogRegion.None)
        {
            return CreateInitialRecord(ref slot, in key, in input, in session);
        }

        if (region == LogRegion.OnStorage)
        {
            storageRead = new StorageRead(address, slot.Address);
            return OperationStatus.RecordOnStorage;
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        switch (DecideUpdate(region, record.Header, in session))
        {
            case UpdateDecision.CrossVersion:
                return OperationStatus.CrossVersion;

            case UpdateDecision.Wait:
                return OperationStatus.Pending;

            case UpdateDecision.InPlace when !record.Header.Tombstone:
                _functions.InPlaceUpdater(in key, in input, ref record.Value);
                return OperationStatus.Success;

            default:
                // Deleted: nobody updates a tombstone in place, so starting a fresh value at the tail loses nothing.
                return record.Header.Tombstone
                    ? CreateInitialRecord(ref slot, in key, in input, in session)
                    : CopyUpdateRecord(ref slot, in key, in input, address, in session);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CreateInitialRecord(ref IndexSlot slot, in TKey key, in TInput input, in SessionView session)
    {
        OperationStatus appended = TryAppendRecord(in key, slot.Address, tombstone: false, in session, out long address,
                out LogRecord<TKey, TValue> record);
        if (appended != OperationStatus.Success)
        {
            return appended;
        }

        _functions.InitialUpdater(in key, in input, ref record.Value);
        return LinkRecord(ref slot, address, record);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CopyUpdateRecord(
        ref IndexSlot slot, in TKey key, in TInput input, long sourceAddress, in SessionView session)
    {
        OperationStatus appended = TryAppendRecord(in key, slot.Address, tombstone: false, in session, out long address,
                out LogRecord<TKey, TValue> record);
        if (appended != OperationStatus.Success)
        {
            return appended;
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
