using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read (FASTER Alg. 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRead(in TKey key, in TInput input, ref TOutput output, out StorageRead storageRead)
    {
        storageRead = default;
        if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot))
        {
            return OperationStatus.NotFound;
        }

        LogView view = Log.GetView();
        long address = TraceBackForKey(in key, slot.Address, view.HeadAddress);
        switch (view.Classify(address))
        {
            case LogRegion.Mutable:
            case LogRegion.Fuzzy:
            {
                // Another thread may be updating this value in place.
                LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
                if (record.Header.Tombstone)
                {
                    return OperationStatus.NotFound;
                }

                _functions.ConcurrentReader(in key, in input, in record.Value, ref output);
                return OperationStatus.Success;
            }

            case LogRegion.SafeReadOnly:
            {
                LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
                if (record.Header.Tombstone)
                {
                    return OperationStatus.NotFound;
                }

                _functions.SingleReader(in key, in input, in record.Value, ref output);
                return OperationStatus.Success;
            }

            case LogRegion.OnStorage:
                storageRead = new StorageRead(address, slot.Address);
                return OperationStatus.RecordOnStorage;

            default:
                return OperationStatus.NotFound;
        }
    }
}
