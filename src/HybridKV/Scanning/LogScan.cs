using System.Runtime.CompilerServices;
using HybridKV.Log;
using HybridKV.Operations;

namespace HybridKV.Scanning;

/// <summary>
/// Walks the log's records in address order, from memory and the device, a page at a time (two page buffers, whatever
/// the log's size), either every record of a range or, for a live scan, each key's last record below where the scan
/// began (tombstones hidden), decided by tracing the key's chain as compaction does.
/// </summary>
internal static class LogScan
{
    public static async IAsyncEnumerable<ScanRecord<TKey, TValue>> RunAsync<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine, Func<bool> storeDisposed,
        long fromAddress, long untilAddress, bool liveOnly, [EnumeratorCancellation] CancellationToken cancellationToken)
        where TKey : unmanaged
        where TValue : unmanaged
        where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
    {
        HybridLog log = engine.Log;
        if (!engine.Epoch.TryAcquireEntry(out int entry))
        {
            throw new InvalidOperationException(
                $"A scan needs an epoch row as a session does, and all {engine.Epoch.Capacity} are taken: raise " +
                $"{nameof(StoreSettings.MaxSessions)} or dispose sessions and scans.");
        }

        try
        {
            using LogPins.Pin pin = log.Pins.PinBegin(log);
            using var reader = new LogReader<TKey, TValue>(log, engine.Epoch, entry, engine.Clock, storeDisposed);
            var tracer = new LiveRecordTracer<TKey, TValue, TInput, TOutput, TContext, TFunctions>(engine, reader);
            long until = Math.Min(untilAddress, log.TailAddress);
            // Every operation that reserved room below 'until' was in progress (protected) when the tail was read:
            // once they have all moved on, every record below it is whole (or marked invalid).
            await engine.Epoch.WaitUntilSafeAsync(engine.Epoch.CurrentEpoch, cancellationToken).ConfigureAwait(false);
            long pageMask = log.PageSize - 1L;
            long from = Math.Max(fromAddress, pin.Address);
            pin.MoveTo(from);
            for (long page = from & ~pageMask; page < until; page += log.PageSize)
            {
                long start = Math.Max(from, page);
                long end = Math.Min(until, page + log.PageSize);
                pin.MoveTo(page);
                // Records below the begin address are gone (compaction moved it past this scan's pin: not possible
                // while pinned, but a user's ShiftBeginAddressAsync before the pin was taken is).
                await reader.ReadPageAsync(start, end, cancellationToken).ConfigureAwait(false);
                long next = start;
                while (reader.NextRecord(ref next, end, out long address, out bool noValue))
                {
                    cancellationToken.ThrowIfCancellationRequested();
                    if (liveOnly)
                    {
                        if (noValue)
                        {
                            continue;
                        }

                        (Liveness liveness, _) = await tracer.TraceAsync(reader.KeyAt(address), address, until,
                            coveredBelow: long.MinValue, cancellationToken).ConfigureAwait(false);
                        if (liveness != Liveness.Live)
                        {
                            continue;
                        }
                    }

                    yield return RecordAt(reader, address);
                }
            }
        }
        finally
        {
            engine.Epoch.ReleaseEntry(entry);
        }
    }

    private static ScanRecord<TKey, TValue> RecordAt<TKey, TValue>(LogReader<TKey, TValue> reader, long address)
        where TKey : unmanaged
        where TValue : unmanaged
    {
        LogRecord<TKey, TValue> record = reader.PageRecordAt(address);
        VarBytes keyScratch = default;
        VarBytes valueScratch = default;
        DateTimeOffset? expiresAt = record.Header.Expiring
            ? DateTimeOffset.FromUnixTimeMilliseconds(record.ExpiresAt)
            : null;
        return new ScanRecord<TKey, TValue>(address, record.KeyRef(ref keyScratch), record.ValueRef(ref valueScratch),
            record.Header.Tombstone, expiresAt);
    }
}
