using System.Diagnostics;
using System.Runtime.CompilerServices;
using HybridKV.Checkpoints;
using HybridKV.Index;
using HybridKV.Log;
using HybridKV.Utilities;

namespace HybridKV.Operations;

/// <summary>Steps shared by the operations: hashing, tracing a chain, appending and linking a record.</summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private KeyHash HashOf(in TKey key) => new(_functions.GetHashCode64(in key));

    /// <summary>The key's 64-bit hash, which sessions order their pending operations on one key by.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public long KeyHashOf(in TKey key) => HashOf(in key).Value;

    /// <summary>
    /// Follows the hash chain from <paramref name="address"/> to the newest record of <paramref name="key"/>, stopping
    /// at the first address below <paramref name="minAddress"/> (FASTER's trace_back_until). Returns the record's
    /// address, or the first address below the limit if the key has no record above it.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long TraceBackForKey(in TKey key, long address, long minAddress)
    {
        while (address >= minAddress)
        {
            LogRecord<TKey, TValue> record = Log.GetRecord<TKey, TValue>(address);
            if (!record.Header.Invalid && RecordHasKey(record, in key))
            {
                return address;
            }

            address = record.Header.PreviousAddress;
        }

        return address;
    }

    /// <summary>
    /// Whether a record holds no value for its key: a delete marker, or a value whose expiry has passed. The clock is
    /// read only for a record that carries an expiry, so stores that never set one pay a bit test.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool HoldsNoValue(LogRecord<TKey, TValue> record)
    {
        // One test of the header on the hot path: a live record without an expiry has neither bit.
        long word = record.Header.Word;
        return (word & (RecordHeader.TombstoneBit | RecordHeader.ExpiringBit)) != 0
               && ((word & RecordHeader.TombstoneBit) != 0 || HasExpired(record));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool HasExpired(LogRecord<TKey, TValue> record) => record.ExpiresAt <= NowMilliseconds;

    /// <summary>The store's clock in the unit of a record's expiry: milliseconds since the Unix epoch.</summary>
    public long NowMilliseconds => Clock.GetUtcNow().ToUnixTimeMilliseconds();

    /// <summary>The expiry time a value written from <paramref name="source"/> carries when the operation gave
    /// <paramref name="expiry"/> (<see cref="ExpiryTime.Keep"/> keeps the source's).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static long ExpiryAfterUpdate(LogRecord<TKey, TValue> source, long expiry) =>
        expiry == ExpiryTime.Keep && source.Header.Expiring ? source.ExpiresAt : expiry;

    /// <summary>Whether an update giving <paramref name="expiry"/> leaves the record's expiry as it is, so that it may
    /// change the value in place (an expiry is never changed in place: see <see cref="RecordHeader"/>).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool KeepsExpiryOf(LogRecord<TKey, TValue> record, long expiry) =>
        expiry == ExpiryTime.Keep || (expiry == ExpiryTime.Never && !record.Header.Expiring);

    /// <summary>Whether a record holds <paramref name="key"/>, by the user's equality.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool RecordHasKey(LogRecord<TKey, TValue> record, in TKey key)
    {
        VarBytes scratch = default;
        return _functions.KeyEquals(in key, in record.KeyRef(ref scratch));
    }

    /// <summary>
    /// Reserves a record at the tail and writes its header, key and expiry; the caller writes the value and then links
    /// it. <paramref name="valueLength"/> is the length of the value it will write (ignored for fixed-size values);
    /// <paramref name="expiry"/> a time (<see cref="ExpiryTime.IsTime"/>) makes an expiring record.
    /// Returns <see cref="OperationStatus.RetryLater"/> when the log has no free frame yet, and throws
    /// <see cref="LogFullException"/> when it never will.
    /// </summary>
    /// <returns>
    /// <see cref="OperationStatus.Success"/>, <see cref="OperationStatus.RetryLater"/>, or
    /// <see cref="OperationStatus.CrossVersion"/> when the global CPR state moved while the allocation waited for a
    /// page turn: the wait refreshed this thread's epoch, so a checkpoint may have moved past the phase this operation
    /// decided in (and even crossed the session's CPR point on its behalf). The reserved record is then left invalid
    /// and the operation starts over with a fresh view; likewise while a snapshot copies the log, if the wait refreshed
    /// this thread at all (a copy decided before may no longer be safe). Also <see cref="OperationStatus.CrossVersion"/>, before
    /// anything is allocated, when <paramref name="slot"/> was found while the index prepared a resize: its entry
    /// cannot be swung, and the session moves its epoch on before it starts over (FASTER appendix B).
    /// </returns>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus TryAppendRecord(
        in TKey key, int valueLength, in IndexSlot slot, bool tombstone, long expiry, in SessionView session,
        out long address, out LogRecord<TKey, TValue> record)
    {
        if (slot.FoundWhilePreparing)
        {
            address = 0;
            record = default;
            return OperationStatus.CrossVersion;
        }

        // While a snapshot copies, a copy decided on a record not yet copied is safe only while this thread's epoch
        // holds back the offset below which updates go in place again (SnapshotProgress); a wait for a page turn
        // refreshes it.
        long epochBefore = session.State.Phase == CprPhase.WaitFlush ? Epoch.LocalEpochOf(session.EpochEntry) : 0;
        long previousAddress = slot.Address;
        bool expiring = ExpiryTime.IsTime(expiry);
        int size = LogRecord<TKey, TValue>.IsVariable ? CheckedRecordSize(in key, valueLength, expiring)
            : RecordSize + (expiring ? LogRecord<TKey, TValue>.ExpiryWordSize : 0);
        AllocationResult result = Log.TryAllocate(size, session.EpochEntry, out address);
        if (result != AllocationResult.Success)
        {
            if (result == AllocationResult.Full)
            {
                ThrowHelper.ThrowLogFull(_settings.MemorySizeBytes, Log.PageSize, Log.TailAddress);
            }

            if (result == AllocationResult.AddressSpaceExhausted)
            {
                ThrowHelper.ThrowAddressSpaceExhausted(Log.TailAddress, Log.AddressLimit, _settings.PageSizeBits);
            }

            record = default;
            return OperationStatus.RetryLater;
        }

        record = Log.GetRecord<TKey, TValue>(address);
        record.Initialize(in key, valueLength);
        record.Header = RecordHeader.Create(previousAddress, session.RecordVersion, tombstone, expiring);
        if (expiring)
        {
            record.ExpiresAt = expiry;
        }

        if (Volatile.Read(ref _systemState) != session.State.Word
            || (epochBefore != 0 && Epoch.LocalEpochOf(session.EpochEntry) != epochBefore))
        {
            record.Header.SetInvalid();
            return OperationStatus.CrossVersion;
        }

        return OperationStatus.Success;
    }

    /// <summary>
    /// Gives up a record allocated at the tail but not linked, because the user's writer threw: marked invalid, so that
    /// neither a reader following a chain nor recovery's replay of the log ever takes it for the key's value.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AbandonTentative(LogRecord<TKey, TValue> record) => record.Header.SetInvalid();

    /// <summary>The size of a variable-layout record, or an exception naming the limit if it exceeds a page.</summary>
    private int CheckedRecordSize(in TKey key, int valueLength, bool expiring = false)
    {
        int keyLength = LogRecord<TKey, TValue>.KeyLengthOf(in key);
        long size = LogRecord<TKey, TValue>.SizeFor(keyLength, valueLength, expiring);
        if (size > Log.PageSize || valueLength < 0)
        {
            ThrowHelper.ThrowRecordTooLarge(keyLength, valueLength, size, Log.PageSize, LogRecord<TKey, TValue>.MinSize);
        }

        return (int)size;
    }

    /// <summary>
    /// Makes a new record the head of its chain with a CAS on the index entry. If another thread changed the entry
    /// first, the record is marked invalid (it is in no chain) and the operation starts over (FASTER Alg. 3, 17–19).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private OperationStatus LinkRecord(ref IndexSlot slot, long address, LogRecord<TKey, TValue> record)
    {
        Debug.Assert(record.Header.PreviousAddress == slot.Address, "A record links to the entry it was built on.");
        if (Index.TryUpdateEntry(ref slot, address))
        {
            return OperationStatus.Success;
        }

        record.Header.SetInvalid();
        return OperationStatus.RetryNow;
    }
}
