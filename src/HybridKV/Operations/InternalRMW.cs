using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read-modify-write (FASTER Alg. 4 and Table 2; CPR App. B–C).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRMW(
        in TKey key, in TInput input, long expiry, in SessionView session, out StorageRead storageRead)
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
            return CreateInitialRecord(ref slot, in key, in input, expiry, in session);
        }

        if (region == LogRegion.OnStorage)
        {
            storageRead = new StorageRead(address, slot.Address);
            return OperationStatus.RecordOnStorage;
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        switch (DecideUpdate(region, record.Header, address, in session))
        {
            case UpdateDecision.CrossVersion:
                return OperationStatus.CrossVersion;

            case UpdateDecision.Wait:
                return OperationStatus.Pending;

            case UpdateDecision.InPlace when KeepsExpiryOf(record, expiry) && !HoldsNoValue(record)
                                             && TryUpdateInPlace(record, in key, in input):
                return OperationStatus.Success;

            default:
                // Read-only, sealed (a variable-length value outgrew it: nobody changes it in place any more), an
                // expiry to change, deleted or expired: nobody updates a tombstone in place, nor an expired record (its
                // expiry never changes in place, so it stays expired), so starting a fresh value at the tail loses
                // nothing.
                return HoldsNoValue(record)
                    ? CreateInitialRecord(ref slot, in key, in input, expiry, in session)
                    : CopyUpdateRecord(ref slot, in key, in input, address, expiry, in session);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CreateInitialRecord(
        ref IndexSlot slot, in TKey key, in TInput input, long expiry, in SessionView session)
    {
        int length = LogRecord<TKey, TValue>.HasVariableValue ? _functions.GetInitialValueLength(in key, in input) : 0;
        OperationStatus appended = TryAppendRecord(in key, length, in slot, tombstone: false, expiry, in session,
                out long address, out LogRecord<TKey, TValue> record);
        if (appended != OperationStatus.Success)
        {
            return appended;
        }

        VarBytes scratch = default;
        ref TValue value = ref record.ValueRef(ref scratch);
        try
        {
            _functions.InitialUpdater(in key, in input, ref value);
        }
        catch
        {
            AbandonTentative(record);
            throw;
        }

        record.StoreValueLength(ref value);
        return LinkRecord(ref slot, address, record);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CopyUpdateRecord(
        ref IndexSlot slot, in TKey key, in TInput input, long sourceAddress, long expiry, in SessionView session)
    {
        LogRecord<TKey, TValue> source = Log.GetRecord<TKey, TValue>(sourceAddress);
        int length = LogRecord<TKey, TValue>.HasVariableValue ? UpdatedLengthOf(source, in key, in input) : 0;
        OperationStatus appended = TryAppendRecord(in key, length, in slot, tombstone: false,
                ExpiryAfterUpdate(source, expiry), in session,
                out long address, out LogRecord<TKey, TValue> record);
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

        return CopyAndLink(ref slot, in key, in input, Log.GetRecord<TKey, TValue>(sourceAddress), address, record);
    }

    /// <summary>The length a copy-updated value will have (0, unused, for fixed-size values).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int UpdatedLengthOf(LogRecord<TKey, TValue> source, in TKey key, in TInput input)
    {
        if (!LogRecord<TKey, TValue>.HasVariableValue)
        {
            return 0;
        }

        VarBytes scratch = default;
        return _functions.GetUpdatedValueLength(in key, in input, in source.ValueRef(ref scratch));
    }

    /// <summary>Runs the CopyUpdater from <paramref name="source"/> into the new record and links it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CopyAndLink(
        ref IndexSlot slot, in TKey key, in TInput input, LogRecord<TKey, TValue> source, long address,
        LogRecord<TKey, TValue> record)
    {
        VarBytes oldScratch = default;
        VarBytes newScratch = default;
        ref TValue newValue = ref record.ValueRef(ref newScratch);
        try
        {
            _functions.CopyUpdater(in key, in input, in source.ValueRef(ref oldScratch), ref newValue);
        }
        catch
        {
            AbandonTentative(record);
            throw;
        }

        record.StoreValueLength(ref newValue);
        return LinkRecord(ref slot, address, record);
    }
}
