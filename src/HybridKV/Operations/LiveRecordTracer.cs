using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Decides whether records found by a walk over the log (compaction, a live scan) are their key's current record,
/// following the hash chain from the index through memory and, one record read at a time, the device.
/// </summary>
internal sealed class LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
    StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine, LogReader<TKey, TValue> reader)
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    /// <summary>
    /// Whether the record of <paramref name="key"/> at <paramref name="address"/> is the newest of its key below
    /// <paramref name="newerFrom"/>; when it is, <see cref="LivenessTrace.Entry"/> of the result is the index entry the
    /// trace started from (a copy must be linked from there). <paramref name="key"/> must stay valid across the
    /// device reads (a copy, or bytes in a buffer the caller owns).
    /// </summary>
    /// <param name="key">The record's key.</param>
    /// <param name="address">The record's address.</param>
    /// <param name="newerFrom">Records at or above this address do not count as newer.</param>
    /// <param name="coveredBelow">The caller knows that no record of the key lies between <paramref name="address"/>
    /// and this address: a chain that reaches below it without meeting the key reaches the record (no device read).</param>
    /// <param name="cancellationToken">Stops the trace.</param>
    public async ValueTask<(Liveness Liveness, LivenessTrace Trace)> TraceAsync(
        TKey key, long address, long newerFrom, long coveredBelow, CancellationToken cancellationToken)
    {
        LivenessTrace trace = default;
        Liveness liveness;
        reader.Protect();
        try
        {
            liveness = engine.TraceLiveInMemory(in key, address, newerFrom, ref trace);
        }
        finally
        {
            reader.Unprotect();
        }

        while (liveness == Liveness.OnDevice)
        {
            long cursor = trace.Cursor;
            if (cursor < coveredBelow)
            {
                return (Liveness.Live, trace);
            }

            await reader.ReadRecordAsync(cursor, cancellationToken).ConfigureAwait(false);
            liveness = Step(in key, address, newerFrom, cursor, ref trace);
        }

        return (liveness, trace);
    }

    private Liveness Step(in TKey key, long address, long newerFrom, long cursor, ref LivenessTrace trace)
    {
        LogRecord<TKey, TValue> record = reader.Record;
        reader.ThrowIfDamaged(record, cursor, engine.Log.PageSize - (int)(cursor & (engine.Log.PageSize - 1)));
        return engine.TraceLiveOnDevice(in key, address, newerFrom, record, ref trace);
    }
}
