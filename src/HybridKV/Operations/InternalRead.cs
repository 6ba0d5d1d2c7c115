using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read (FASTER Alg. 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>
    /// The first step of a prefetch (<see cref="Sessions.Session{TKey, TValue, TInput, TOutput, TContext, TFunctions}.Prefetch"/>):
    /// start loading the key's bucket, so that the cache misses of many keys overlap instead of following one another
    /// (an operation in memory is two dependent misses: bucket, then record).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void PrefetchBucket(in TKey key) => Index.Prefetch(HashOf(in key));

    /// <summary>The second step, under protection: start loading the record the key's entry leads to.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void PrefetchRecord(in TKey key) => FindChainHead(HashOf(in key));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRead(in TKey key, in TInput input, ref TOutput output, out StorageRead storageRead)
    {
        storageRead = default;
        if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot))
        {
            return OperationStatus.NotFound;
        }

        // A read needs only two of the offsets: the head (in memory or not) and the safe read-only offset (whether
        // another thread may still change the value in place). Both only grow, so reading the second later is safe.
        long head = Log.HeadAddress;
        long address = TraceBackForKey(in key, slot.Address, head);
        if (address < head)
        {
            if (address < Log.BeginAddress)
            {
                return OperationStatus.NotFound;
            }

            if (ReadCache is not null)
            {
                OperationStatus cached = ReadThroughCache(in key, in input, ref output, ref address);
                if (cached != OperationStatus.RecordOnStorage)
                {
                    return cached;
                }
            }

            storageRead = new StorageRead(address, slot.Address);
            return OperationStatus.RecordOnStorage;
        }

        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        if (HoldsNoValue(record))
        {
            return OperationStatus.NotFound;
        }

        if (address >= Log.SafeReadOnlyAddress)
        {
            // Mutable or fuzzy: another thread may be updating this value in place.
            ReadConcurrently(record, in key, in input, ref output);
        }
        else
        {
            VarBytes scratch = default;
            _functions.SingleReader(in key, in input, in record.ValueRef(ref scratch), ref output);
        }

        return OperationStatus.Success;
    }

    /// <summary>
    /// Follows the chain below the head through the read cache: the key's record found there is read as a read-only
    /// record would be; a record of another key (same tag) leads further down. Returns
    /// <see cref="OperationStatus.RecordOnStorage"/> with <paramref name="address"/> the first record not cached.
    /// Kept out of <see cref="InternalRead"/> so that reads from memory pay nothing for it.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private unsafe OperationStatus ReadThroughCache(in TKey key, in TInput input, ref TOutput output, ref long address)
    {
        byte* copy = stackalloc byte[ReadCache!.RecordBytes];
        while (ReadCache.TryCopy(address, new Span<byte>(copy, ReadCache.RecordBytes)))
        {
            var record = new LogRecord<TKey, TValue>(copy);
            if (record.Header.Invalid || !RecordHasKey(record, in key))
            {
                address = record.Header.PreviousAddress;
                if (address < Log.BeginAddress)
                {
                    return OperationStatus.NotFound;
                }

                continue;
            }

            if (HoldsNoValue(record))
            {
                return OperationStatus.NotFound;
            }

            VarBytes scratch = default;
            _functions.SingleReader(in key, in input, in record.ValueRef(ref scratch), ref output);
            return OperationStatus.Success;
        }

        return OperationStatus.RecordOnStorage;
    }
}
