namespace HybridKV.Log;

/// <summary>
/// What the log, which is not generic over the record types, needs of its records: writing the checksums of a range
/// of a page before it goes to the device (and, on the way, noting what each record was linked in front of).
/// </summary>
internal abstract unsafe class RecordFormat
{
    /// <summary>Writes the checksum of every record in [from, to) of the page at <paramref name="page"/>, and adds the
    /// link of each valid one to a batch of <paramref name="links"/>, if it has one free.</summary>
    public abstract void WriteChecksums(byte* page, long pageAddress, int pageSize, long from, long to,
        FlushedLinks? links = null);
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
    public override void WriteChecksums(byte* page, long pageAddress, int pageSize, long from, long to,
        FlushedLinks? links = null)
    {
        // Flushes cover ranges the tail or an earlier flush ended at: record starts.
        var walk = new PageRecords<TKey, TValue>(page, pageAddress, pageSize, from, to, fromIsRecordStart: true);
        FlushedLinks.Batch? batch = LogRecord<TKey, TValue>.IsVariable ? null : links?.TakeFree();
        try
        {
            while (walk.MoveNext())
            {
                LogRecord<TKey, TValue> record = walk.Current;
                record.WriteChecksum();
                if (batch is not null && !record.Header.Invalid)
                {
                    VarBytes scratch = default;
                    batch.Add(record.Header.PreviousAddress, in record.KeyRef(ref scratch));
                }
            }
        }
        finally
        {
            // Also when the walk failed: a batch never handed back would be lost to the flushes for good.
            if (batch is not null)
            {
                links!.Publish(batch);
            }
        }
    }
}
