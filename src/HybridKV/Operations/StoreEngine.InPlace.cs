using System.Runtime.CompilerServices;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Reading and changing values in the mutable region, where other threads may do the same (FASTER §4: the
/// concurrent callbacks). A fixed-size value is handed to the callbacks as it is. A variable-length value is changed
/// under its record's value lock, which also makes sealing exact: a record sealed under the lock is never changed in
/// place again, so it can be copied at once; and a reader retries if a writer changed the value while it read.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ReadConcurrently(LogRecord<TKey, TValue> record, in TKey key, in TInput input, ref TOutput output)
    {
        VarBytes scratch = default;
        if (!LogRecord<TKey, TValue>.HasVariableValue)
        {
            _functions.ConcurrentReader(in key, in input, in record.ValueRef(ref scratch), ref output);
            return;
        }

        int sequence;
        do
        {
            sequence = record.BeginValueRead();
            _functions.ConcurrentReader(in key, in input, in record.ValueRef(ref scratch), ref output);
        }
        while (!record.ValueReadStillValid(sequence));
    }

    /// <summary>An in-place upsert. False if the record was sealed or deleted meanwhile: append instead.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryWriteInPlace(LogRecord<TKey, TValue> record, in TKey key, in TValue value)
    {
        VarBytes scratch = default;
        if (!LogRecord<TKey, TValue>.HasVariableValue)
        {
            _functions.ConcurrentWriter(in key, in value, ref record.ValueRef(ref scratch));
            return true;
        }

        int sequence = record.LockValue();
        try
        {
            if (record.Header.Sealed || record.Header.Tombstone)
            {
                return false;
            }

            ref TValue destination = ref record.ValueRef(ref scratch);
            LogRecord<TKey, TValue>.PresetLength(ref destination, LogRecord<TKey, TValue>.ValueLengthOf(in value));
            _functions.ConcurrentWriter(in key, in value, ref destination);
            record.StoreValueLength(ref destination);
            return true;
        }
        finally
        {
            record.UnlockValue(sequence);
        }
    }

    /// <summary>
    /// The in-place update of Table 2's mutable row. A variable-length value is updated in place only if its record
    /// has room for the length the functions ask for; otherwise the record is sealed, under the lock, and false tells
    /// the caller to copy it (or to start a new value if it was deleted meanwhile).
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The grown value would not fit in a page; nothing changed.</exception>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryUpdateInPlace(LogRecord<TKey, TValue> record, in TKey key, in TInput input)
    {
        VarBytes scratch = default;
        if (!LogRecord<TKey, TValue>.HasVariableValue)
        {
            _functions.InPlaceUpdater(in key, in input, ref record.ValueRef(ref scratch));
            return true;
        }

        int sequence = record.LockValue();
        try
        {
            if (record.Header.Sealed || record.Header.Tombstone)
            {
                return false;
            }

            ref TValue value = ref record.ValueRef(ref scratch);
            int needed = _functions.GetUpdatedValueLength(in key, in input, in value);
            if ((uint)needed > (uint)record.ValueCapacity)
            {
                CheckedRecordSize(in key, needed, record.Header.Expiring);
                record.Header.Seal();
                return false;
            }

            _functions.InPlaceUpdater(in key, in input, ref value);
            record.StoreValueLength(ref value);
            return true;
        }
        finally
        {
            record.UnlockValue(sequence);
        }
    }

    /// <summary>
    /// An in-place delete: sets the tombstone. False if a variable-length value's record was sealed meanwhile (append
    /// a tombstone instead); <paramref name="wasDeleted"/> if another thread deleted it first.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool TryDeleteInPlace(LogRecord<TKey, TValue> record, out bool wasDeleted)
    {
        if (!LogRecord<TKey, TValue>.HasVariableValue)
        {
            wasDeleted = false;
            record.Header.SetTombstone();
            return true;
        }

        int sequence = record.LockValue();
        try
        {
            wasDeleted = record.Header.Tombstone;
            if (wasDeleted)
            {
                return true;
            }

            if (record.Header.Sealed)
            {
                return false;
            }

            record.Header.SetTombstone();
            return true;
        }
        finally
        {
            record.UnlockValue(sequence);
        }
    }
}
