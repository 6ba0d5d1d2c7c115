using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>Read (FASTER Alg. 2).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>A read whose caller has not looked its key up in the index (<see cref="InternalRead"/>).</summary>
    public const long ChainUnknown = -1;

    /// <summary>
    /// The first step of a prefetch (<see cref="Sessions.Session{TKey, TValue, TInput, TOutput, TContext, TFunctions}.Prefetch"/>):
    /// start loading the key's bucket, so that the cache misses of many keys overlap instead of following one another
    /// (an operation in memory is two dependent misses: bucket, then record). Returns the key's hash for the second.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public KeyHash PrefetchBucket(in TKey key)
    {
        KeyHash hash = HashOf(in key);
        Index.Prefetch(hash);
        return hash;
    }

    /// <summary>
    /// The second step, under protection: start loading the record the key's entry leads to. Returns that address,
    /// <see cref="LogAddress.Invalid"/> if the key has no entry: a read under the same protection may start from it.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public long PrefetchRecord(KeyHash hash) => FindChainHead(hash);

    /// <summary>
    /// Reads <paramref name="key"/> from the chain its index entry led to: <paramref name="chainHead"/>, found by
    /// <see cref="PrefetchRecord"/> under the caller's current protection, or <see cref="ChainUnknown"/> to look it
    /// up here.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public OperationStatus InternalRead(
        in TKey key, in TInput input, ref TOutput output, long chainHead, out StorageRead storageRead)
    {
        storageRead = default;
        if (chainHead == ChainUnknown)
        {
            if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot))
            {
                return OperationStatus.NotFound;
            }

            chainHead = slot.Address;
        }
        else if (chainHead == LogAddress.Invalid)
        {
            return OperationStatus.NotFound;
        }

        // A read needs only two of the offsets: the head (in memory or not) and the safe read-only offset (whether
        // another thread may still change the value in place). Both only grow, so reading the second later is safe.
        long head = Log.HeadAddress;
        long address = TraceBackForKey(in key, chainHead, head);
        if (address < head)
        {
            if (address < Log.BeginAddress)
            {
                return ChainEndedBelowBegin(in key, chainHead);
            }

            if (ReadCache is not null)
            {
                OperationStatus cached = ReadThroughCache(in key, in input, ref output, chainHead, ref address);
                if (cached != OperationStatus.RecordOnStorage)
                {
                    return cached;
                }
            }

            storageRead = new StorageRead(address, chainHead);
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
    /// The answer of a read whose chain from <paramref name="chainHead"/> ended below the begin address: the key is
    /// gone only if its entry still leads there. Compaction copies a live record forward and swings the entry before
    /// it moves the begin address, and it does not wait for readers that found the entry before the swing: such a
    /// reader starts over (<see cref="OperationStatus.RetryNow"/>).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private OperationStatus ChainEndedBelowBegin(in TKey key, long chainHead) =>
        Index.TryFindEntry(HashOf(in key), out IndexSlot slot) && slot.Address != chainHead
            ? OperationStatus.RetryNow
            : OperationStatus.NotFound;

    /// <summary>
    /// Follows the chain below the head through the read cache: the key's record found there is read as a read-only
    /// record would be; a record of another key (same tag) leads further down. Returns
    /// <see cref="OperationStatus.RecordOnStorage"/> with <paramref name="address"/> the first record not cached.
    /// Kept out of <see cref="InternalRead"/> so that reads from memory pay nothing for it.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private unsafe OperationStatus ReadThroughCache(
        in TKey key, in TInput input, ref TOutput output, long chainHead, ref long address)
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
                    return ChainEndedBelowBegin(in key, chainHead);
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
