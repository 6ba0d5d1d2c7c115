using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Upsert, a blind update (FASTER Alg. 3 and Table 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalUpsert(in TKey key, in TValue value, long expiry, in SessionView session)
    {
        if (session.WritesDeferred)
        {
            return OperationStatus.RetryLater;
        }

        IndexSlot slot = Index.FindOrCreateEntry(HashOf(in key));
        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        LogRegion region = view.Classify(address);
        if (region >= LogRegion.SafeReadOnly)
        {
            LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
            UpdateDecision decision = DecideUpdate(region, record.Header, address, in session);
            if (decision == UpdateDecision.CrossVersion)
            {
                return OperationStatus.CrossVersion;
            }

            // An upsert replaces the expiry too: in place only where there is none to replace and none to set.
            if (decision == UpdateDecision.InPlace && !record.Header.Tombstone
                && !record.Header.Expiring && !ExpiryTime.IsTime(expiry)
                && LogRecord<TKey, TValue>.ValueLengthOf(in value) <= record.ValueCapacity
                && TryWriteInPlace(record, in key, in value))
            {
                return OperationStatus.Success;
            }
        }

        // Anything but in place (including a value longer than the record has room for): a blind update needs no old
        // value, so it never waits for the fuzzy region, for storage, or for an older version's in-place updates; the
        // newer record simply shadows the older one.
        return AppendUpsert(ref slot, in key, in value, expiry, in session);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus AppendUpsert(
        ref IndexSlot slot, in TKey key, in TValue value, long expiry, in SessionView session)
    {
        int length = LogRecord<TKey, TValue>.ValueLengthOf(in value);
        OperationStatus appended = TryAppendRecord(in key, length, in slot, tombstone: false, expiry, in session,
                out long address, out LogRecord<TKey, TValue> record);
        if (appended != OperationStatus.Success)
        {
            return appended;
        }

        VarBytes scratch = default;
        ref TValue destination = ref record.ValueRef(ref scratch);
        try
        {
            _functions.SingleWriter(in key, in value, ref destination);
        }
        catch
        {
            AbandonTentative(record);
            throw;
        }

        record.StoreValueLength(ref destination);
        return LinkRecord(ref slot, address, record);
    }
}
