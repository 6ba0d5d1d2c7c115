using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>What a split of the index reads from the log: the key hash of an in-memory record (FASTER appendix B).</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IChainReader
{
    long IChainReader.HeadAddress => Log.HeadAddress;

    long IChainReader.BeginAddress => Log.BeginAddress;

    long IChainReader.KeyHashAt(long address, out long previousAddress, out bool invalid)
    {
        LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
        previousAddress = record.Header.PreviousAddress;
        invalid = record.Header.Invalid;
        if (invalid)
        {
            return 0;
        }

        VarBytes scratch = default;
        return _functions.GetHashCode64(in record.KeyRef(ref scratch));
    }
}
