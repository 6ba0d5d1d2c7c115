namespace HybridKV.Log;

/// <summary>Which records a walk of a page (<see cref="LogReader{TKey, TValue}.NextRecord{TSkip}"/>) passes over, by
/// their address and bytes. A struct, so that the walk binds it statically.</summary>
internal interface ISkipsRecords<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    /// <summary>Whether the valid record at <paramref name="address"/> is passed over.</summary>
    bool Skips(long address, LogRecord<TKey, TValue> record);
}
