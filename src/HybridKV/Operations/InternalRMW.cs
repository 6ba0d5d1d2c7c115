using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read-modify-write (FASTER Alg. 4 and Table 2; CPR App. B–C).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <param name="key">The key.</param>
    /// <param name="input">The input handed to the updaters.</param>
    /// <param name="session">The session's view.</param>
    /// <param name="sealedSafeEpoch">0, or the epoch this operation bumped after it found a sealed record: once that
    /// epoch is safe, no in-place update of the record can still be under way, and it may be copied. Kept by the
    /// caller across attempts.</param>
    /// <param name="storageRead">What to read when the record is on the device.</param>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRMW(
        in TKey key, in TInput input, in SessionView session, ref long sealedSafeEpoch, out StorageRead storageRead)
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
                if (TryUpdateInPlace(record, in key, in input, out int neededLength))
                {
                    return OperationStatus.Success;
                }

                // Refused here, before anything changed, if the grown value cannot fit in any record.
                CheckedRecordSize(in key, neededLength);

                // The value outgrew its record: no more in-place updates, and copy it once the ones already under
                // way have finished (otherwise the copy could miss one of them, the lost update of FASTER §6.2).
                record.Header.Seal();
                return WaitForInPlaceUpdaters(ref sealedSafeEpoch, in session);

            case UpdateDecision.Sealed when !IsSafeToCopySealed(sealedSafeEpoch):
                return WaitForInPlaceUpdaters(ref sealedSafeEpoch, in session);

            default:
                // Deleted: nobody updates a tombstone in place, so starting a fresh value at the tail loses nothing.
                return record.Header.Tombstone
                    ? CreateInitialRecord(ref slot, in key, in input, in session)
                    : CopyUpdateRecord(ref slot, in key, in input, address, in session);
        }
    }

    /// <summary>
    /// The in-place update of Table 2's mutable row. A variable-length value is updated in place only if its record
    /// has room for the length the functions ask for; then the updater sets the new length.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryUpdateInPlace(LogRecord<TKey, TValue> record, in TKey key, in TInput input, out int neededLength)
    {
        VarBytes scratch = default;
        ref TValue value = ref record.ValueRef(ref scratch);
        neededLength = 0;
        if (LogRecord<TKey, TValue>.HasVariableValue
            && (uint)(neededLength = _functions.GetUpdatedValueLength(in key, in input, in value)) > (uint)record.ValueCapacity)
        {
            return false;
        }

        _functions.InPlaceUpdater(in key, in input, ref value);
        record.StoreValueLength(ref value);
        return true;
    }

    private bool IsSafeToCopySealed(long sealedSafeEpoch) => sealedSafeEpoch != 0 && Epoch.SafeEpoch >= sealedSafeEpoch;

    /// <summary>
    /// Bumps the epoch (once per operation) and parks the operation until every thread that could have seen the
    /// record unsealed has left the epoch it was in.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private OperationStatus WaitForInPlaceUpdaters(ref long sealedSafeEpoch, in SessionView session)
    {
        if (sealedSafeEpoch == 0)
        {
            // No reference into the log is used after this call, which may refresh this thread's epoch.
            sealedSafeEpoch = Epoch.BumpCurrentEpoch(NoAction, session.EpochEntry);
        }

        return OperationStatus.Pending;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CreateInitialRecord(ref IndexSlot slot, in TKey key, in TInput input, in SessionView session)
    {
        int length = LogRecord<TKey, TValue>.HasVariableValue ? _functions.GetInitialValueLength(in key, in input) : 0;
        OperationStatus appended = TryAppendRecord(in key, length, slot.Address, tombstone: false, in session,
                out long address, out LogRecord<TKey, TValue> record);
        if (appended != OperationStatus.Success)
        {
            return appended;
        }

        VarBytes scratch = default;
        ref TValue value = ref record.ValueRef(ref scratch);
        _functions.InitialUpdater(in key, in input, ref value);
        record.StoreValueLength(ref value);
        return LinkRecord(ref slot, address, record);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus CopyUpdateRecord(
        ref IndexSlot slot, in TKey key, in TInput input, long sourceAddress, in SessionView session)
    {
        int length = UpdatedLengthOf(Log.GetRecord<TKey, TValue>(sourceAddress), in key, in input);
        OperationStatus appended = TryAppendRecord(in key, length, slot.Address, tombstone: false, in session,
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
        _functions.CopyUpdater(in key, in input, in source.ValueRef(ref oldScratch), ref newValue);
        record.StoreValueLength(ref newValue);
        return LinkRecord(ref slot, address, record);
    }

    private static readonly Action NoAction = static () => { };
}
