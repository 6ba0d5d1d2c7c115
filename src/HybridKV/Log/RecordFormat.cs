namespace HybridKV.Log;

/// <summary>
/// What the log, which is not generic over the record types, needs of its records: writing the checksums of a range
/// of a page before it goes to the device.
/// </summary>
internal abstract unsafe class RecordFormat
{
    /// <summary>Writes the checksum of every record in [from, to) of the page at <paramref name="page"/>.</summary>
    public abstract void WriteChecksums(byte* page, long pageAddress, int pageSize, long from, long to);
}

/// <summary>The records of one store's types.</summary>
internal sealed unsafe class RecordFormat<TKey, TValue> : RecordFormat
    where TKey : unmanaged
    where TValue : unmanaged
{
    public static readonly RecordFormat<TKey, TValue> Instance = new();

    private RecordFormat()
    {
    }

    /// <inheritdoc/>
    public override void WriteChecksums(byte* page, long pageAddress, int pageSize, long from, long to)
    {
        // Flushes cover ranges the tail or an earlier flush ended at: record starts.
        var walk = new PageRecords<TKey, TValue>(page, pageAddress, pageSize, from, to, fromIsRecordStart: true);
        while (walk.MoveNext())
        {
            walk.Current.WriteChecksum();
        }
    }
}
