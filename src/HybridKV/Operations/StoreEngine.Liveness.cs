using System.Runtime.CompilerServices;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Whether a record is live (lookup-based, F2 §4): the chain from its key's index entry meets no newer record of its
/// key before reaching it. Compaction and live scans ask this of records anywhere in the log; the in-memory part of the
/// chain is walked here under epoch protection, the device part by the caller, one record read at a time.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>
    /// Starts or continues tracing <paramref name="key"/>'s chain toward <paramref name="target"/> through memory. The
    /// caller holds protection. <paramref name="trace"/> starts as <c>default</c> (the walk then begins at the index);
    /// on <see cref="Liveness.OnDevice"/> its cursor is the next record to read from the device. Records at or above
    /// <paramref name="newerFrom"/> do not count as newer (a scan looks for the last record below where it began).
    /// </summary>
    public Liveness TraceLiveInMemory(in TKey key, long target, long newerFrom, ref LivenessTrace trace)
    {
        if (trace.Cursor == LogAddress.Invalid)
        {
            if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot))
            {
                return Liveness.Superseded;
            }

            trace = new LivenessTrace(slot.Address, slot.Address);
        }

        long head = Log.HeadAddress;
        long cursor = trace.Cursor;
        while (true)
        {
            if (Reached(cursor, target) is { } reached)
            {
                return reached;
            }

            if (cursor < head)
            {
                trace = trace with { Cursor = cursor };
                return Liveness.OnDevice;
            }

            LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(cursor);
            if (cursor < newerFrom && !record.Header.Invalid && RecordHasKey(record, in key))
            {
                return Liveness.Superseded;
            }

            cursor = record.Header.PreviousAddress;
        }
    }

    /// <summary>
    /// The address the index entry of the key with <paramref name="hash"/> leads to, or <see cref="LogAddress.Invalid"/>
    /// if it has none, with the record there starting to load if it is in memory: a trace started from it
    /// (<see cref="TraceLiveInMemory"/> with <see cref="LivenessTrace"/>(address, address)) soon after finds it
    /// loading or loaded. The caller holds protection. A trace may start from an entry read earlier, even under an
    /// earlier protection: a record found dead then stays dead, and a copy re-checks what was linked since.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public long FindChainHead(KeyHash hash)
    {
        if (!Index.TryFindEntry(hash, out IndexSlot slot))
        {
            return LogAddress.Invalid;
        }

        Log.Prefetch(slot.Address);
        return slot.Address;
    }

    /// <summary>Whether two keys are equal by the user's equality (compaction's key sets).</summary>
    public bool KeysEqual(in TKey first, in TKey second) => _functions.KeyEquals(in first, in second);

    /// <summary>
    /// One step of the trace on the device: <paramref name="record"/> was read at the trace's cursor. Returns
    /// <see cref="Liveness.Superseded"/> if it is a newer record of the key, otherwise moves the cursor down the chain
    /// and returns <see cref="Liveness.OnDevice"/> (the caller checks the new cursor against its target).
    /// </summary>
    public Liveness TraceLiveOnDevice(
        in TKey key, long target, long newerFrom, LogRecord<TKey, TValue> record, ref LivenessTrace trace)
    {
        if (trace.Cursor < newerFrom && !record.Header.Invalid && RecordHasKey(record, in key))
        {
            return Liveness.Superseded;
        }

        long previous = record.Header.PreviousAddress;
        trace = trace with { Cursor = previous };
        return Reached(previous, target) ?? Liveness.OnDevice;
    }

    /// <summary>
    /// Where a chain walk toward <paramref name="target"/> stands at <paramref name="cursor"/>: at it (live), past it
    /// (the index no longer leads to it: a newer record replaced it, or it was never linked), or not yet (null).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static Liveness? Reached(long cursor, long target) =>
        cursor == target ? Liveness.Live : cursor < target ? Liveness.Superseded : null;

    /// <summary>
    /// Appends a copy of <paramref name="source"/> (a record of the log at <paramref name="address"/>, in memory or
    /// read from the device into a buffer) and makes it the head of its key's chain, if the key's index entry still
    /// leads to <paramref name="address"/> without a newer record of the key: from <paramref name="tracedEntry"/>
    /// down, the caller established that; newer entries are traced here, in memory. The caller holds protection; with
    /// a <paramref name="reservation"/>, the copy takes its room from it (<see cref="CopyReservation"/>), and the caller
    /// releases it before leaving protection.
    /// </summary>
    public CopyForwardOutcome ConditionalCopyFromDevice(
        LogRecord<TKey, TValue> source, long address, long tracedEntry, int epochEntry,
        CopyReservation? reservation = null)
    {
        while (true)
        {
            VarBytes scratch = default;
            ref TKey key = ref source.KeyRef(ref scratch);
            if (!Index.TryFindEntry(HashOf(in key), out IndexSlot slot) || slot.Address < tracedEntry)
            {
                return CopyForwardOutcome.NotLive;
            }

            if (slot.Address != tracedEntry)
            {
                // Records linked since the trace: none may be of this key. They are new, so normally in memory.
                long found = TraceBackForKeyAbove(in key, slot.Address, tracedEntry);
                if (found != tracedEntry)
                {
                    return found < 0 ? CopyForwardOutcome.NotNow : CopyForwardOutcome.NotLive;
                }
            }

            CopyForwardOutcome outcome = TryLinkCopy(source, ref slot, epochEntry, sourceInMemoryAt: -1, reservation);
            if (outcome != CopyForwardOutcome.NotLive)
            {
                return outcome;
            }

            // The entry moved under the CAS: the next round looks at what was linked since, down to the traced entry.
        }
    }

    /// <summary>
    /// Walks the chain from <paramref name="address"/> down to <paramref name="stop"/> in memory: returns
    /// <paramref name="stop"/> if no record of the key lies above it, the address of one that does, or -1 if the walk
    /// left memory before reaching <paramref name="stop"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long TraceBackForKeyAbove(in TKey key, long address, long stop)
    {
        long head = Log.HeadAddress;
        while (address > stop)
        {
            if (address < head)
            {
                return -1;
            }

            LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
            if (!record.Header.Invalid && RecordHasKey(record, in key))
            {
                return address;
            }

            address = record.Header.PreviousAddress;
        }

        return address == stop ? stop : -1;
    }
}

/// <summary>Where a liveness trace stands: the index entry it started from and the next address to look at.</summary>
internal readonly record struct LivenessTrace(long Entry, long Cursor);

/// <summary>What a liveness trace found so far.</summary>
internal enum Liveness : byte
{
    /// <summary>The chain reaches the record with no newer record of its key: it is its key's current record.</summary>
    Live,

    /// <summary>A newer record of the key exists, or the index no longer leads to the record.</summary>
    Superseded,

    /// <summary>The chain continues on the device at the trace's cursor.</summary>
    OnDevice,
}
