using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Delete: a tombstone, in place in the mutable region, appended below it (FASTER §4 and §5.3). It never reads the
/// device, so it reports <see cref="OperationStatus.NotFound"/> only when memory or the index shows the key absent.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalDelete(in TKey key, in SessionView session)
    {
        if (session.WritesDeferred)
        {
            return OperationStatus.Pending;
        }

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
            // Blind, like an upsert: the tombstone shadows whatever the device holds. Reading the record only to tell
            // Ok from NotFound would make every delete of a cold key wait for the device. No record on the device can
            // be of a version after this session's: they were all written before the session took its view.
            return AppendTombstone(ref slot, in key, in session);
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        UpdateDecision decision = DecideUpdate(region, record.Header, address, in session);
        if (decision == UpdateDecision.CrossVersion)
        {
            return OperationStatus.CrossVersion;
        }

        if (record.Header.Tombstone)
        {
            return OperationStatus.NotFound;
        }

        // An expired value is not found, but still gets its tombstone: a clock set back must not bring it back.
        bool expired = record.Header.Expiring && HasExpired(record);
        if (decision == UpdateDecision.InPlace && TryDeleteInPlace(record, out bool wasDeleted))
        {
            return wasDeleted || expired ? OperationStatus.NotFound : OperationStatus.Success;
        }

        // Like an upsert, a tombstone is blind: it shadows the older record from the tail without waiting.
        OperationStatus appended = AppendTombstone(ref slot, in key, in session);
        return expired && appended == OperationStatus.Success ? OperationStatus.NotFound : appended;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus AppendTombstone(ref IndexSlot slot, in TKey key, in SessionView session)
    {
        OperationStatus appended = TryAppendRecord(in key, 0, in slot, tombstone: true, ExpiryTime.Keep, in session,
                out long newAddress, out LogRecord<TKey, TValue> tombstone);
        if (appended != OperationStatus.Success)
        {
            return appended;
        }

        return LinkRecord(ref slot, newAddress, tombstone);
    }
}
