using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Index;
using HybridKV.Log;

namespace HybridKV.Operations;

/// <summary>
/// Continuing parked operations (FASTER appendix G, "pending queue"): retrying from the start, reading records from
/// the device, and finishing an operation with the record it read.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>
{
    /// <summary>Runs a pending operation one step further.</summary>
    /// <returns>
    /// A final status; <see cref="OperationStatus.RecordOnStorage"/> when another record must be read (then
    /// <see cref="StartRecordRead"/>); or <see cref="OperationStatus.Pending"/> / <see cref="OperationStatus.RetryLater"/>
    /// to be tried again later.
    /// </returns>
    public OperationStatus ContinuePending(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, in SessionView session)
    {
        if (!operation.HasRecord)
        {
            return Restart(operation, in session);
        }

        operation.HasRecord = false;
        if (operation.Storage.RecordAddress < Log.BeginAddress)
        {
            // Compaction moved the log's start past the record while it was read (its segment may be gone, so the
            // bytes may be too): the key's current record, if any, is elsewhere now.
            return Restart(operation, in session);
        }

        if (operation.IoError is not null)
        {
            return OperationStatus.Failed;
        }

        LogRecord<TKey, TValue> record = RecordIn(operation);
        if (!record.Header.IsNull && !record.LengthsFitIn(operation.BytesRead - operation.RecordOffset))
        {
            return ReadWholeRecord(operation, record);
        }

        if (!record.ChecksumMatches)
        {
            // Something led here (the index or a newer record of the chain): a record was written at this address.
            long address = operation.Storage.RecordAddress;
            string location = Log.Device!.DescribeAddress(address);
            string problem = record.Header.IsNull
                ? "no record is there (its segment file is missing or shorter than it was written)"
                : "the record's checksum does not match";
            StoreLog.CorruptRecord(_logger, address, location, problem);
            operation.IoError = new CorruptLogException(address, location, problem);
            return OperationStatus.Failed;
        }

        if (operation.Kind == PendingKind.Read && ReadCache is not null)
        {
            ReadCache.Add(operation.Storage.RecordAddress, operation.Buffer!.Span.Slice(operation.RecordOffset, record.Size));
        }

        if (record.Header.Invalid || !RecordHasKey(record, in operation.Key))
        {
            // Another key with the same tag: follow the chain on the device (it only goes further down the log).
            long previous = record.Header.PreviousAddress;
            if (previous >= Log.BeginAddress)
            {
                operation.Storage = operation.Storage with { RecordAddress = previous };
                operation.RecordSizeHint = 0;
                return OperationStatus.RecordOnStorage;
            }

            return ContinueWithNewest(operation, record, found: false, in session);
        }

        if (operation.Kind != PendingKind.Read && IsFromNextVersion(record.Header, operation.Storage.RecordAddress, in session))
        {
            return OperationStatus.CrossVersion;
        }

        return ContinueWithNewest(operation, record, found: true, in session);
    }

    /// <summary>
    /// A variable-layout record that the first read did not cover: read again with the size its lengths give, or
    /// fail the operation if the lengths cannot be those of a record (the device returned something else).
    /// </summary>
    private OperationStatus ReadWholeRecord(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, LogRecord<TKey, TValue> record)
    {
        int available = operation.BytesRead - operation.RecordOffset;
        if (available >= LogRecord<TKey, TValue>.SizeKnownAfter && operation.RecordSizeHint == 0)
        {
            int size = record.Size;
            if (size > 0 && size <= Log.PageSize)
            {
                operation.RecordSizeHint = size;
                return OperationStatus.RecordOnStorage;
            }
        }

        operation.IoError = new InvalidDataException(
            $"The log holds no valid record at address {operation.Storage.RecordAddress}: its lengths describe a " +
            $"record that does not fit in a page of {Log.PageSize} bytes.");
        return OperationStatus.Failed;
    }

    /// <summary>
    /// Reads the record at <c>operation.Storage.RecordAddress</c>, just its sectors, then calls back. A variable-layout
    /// record of unknown size is read with a first guess that covers its lengths and, for most records, all of it.
    /// </summary>
    public void StartRecordRead(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation,
        Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> onCompleted)
    {
        StorageDevice device = Log.Device!;
        long sectorMask = device.SectorSize - 1;
        long address = operation.Storage.RecordAddress;
        long start = address & ~sectorMask;
        int toPageEnd = Log.PageSize - (int)(address & (Log.PageSize - 1));
        int size = !LogRecord<TKey, TValue>.IsVariable ? Math.Min(LogRecord<TKey, TValue>.MaxFixedSize, toPageEnd)
            : operation.RecordSizeHint > 0 ? operation.RecordSizeHint
            : Math.Min(FirstVariableReadSize, toPageEnd);
        int length = (int)(((address + size + sectorMask) & ~sectorMask) - start);
        AlignedBuffer buffer = operation.EnsureBuffer(length, device.SectorSize);
        operation.RecordOffset = (int)(address - start);
        operation.BytesRead = length;
        if (ReadCache is not null &&
            ReadCache.TryCopy(address, buffer.Span[operation.RecordOffset..length]))
        {
            // An RMW of a record a read cached, or a read following a chain through it: no device read.
            operation.RecordAlreadyRead(onCompleted);
            return;
        }

        Interlocked.Add(ref _bytesReadByOperations, length);
        operation.ReadFromDevice(device, start, length, onCompleted);
    }

    /// <summary>Hands a finished pending operation to its completion callback (an upsert has none).</summary>
    public void ReportCompletion(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, Status status)
    {
        switch (operation.Kind)
        {
            case PendingKind.Upsert:
                break;
            case PendingKind.RMW:
                _functions.RMWCompletionCallback(in operation.Key, in operation.Input, operation.Context, status);
                break;
            case PendingKind.Delete:
                _functions.DeleteCompletionCallback(in operation.Key, operation.Context, status);
                break;
            default:
                _functions.ReadCompletionCallback(
                    in operation.Key, in operation.Input, in operation.Output, operation.Context, status);
                break;
        }
    }

    /// <summary>
    /// Finishes a pending operation from the record its device read found (<paramref name="found"/>), or from the
    /// absence of one. A read decides from it as of when the read was decided. An update decides only if that record
    /// is still the newest of its key: the index entry must hold what it held when the read was decided, on every
    /// path (value, tombstone, nothing), or a newer record linked meanwhile (by this session, another, or anything
    /// else) would be ignored; otherwise the update starts over from the newest record.
    /// </summary>
    private OperationStatus ContinueWithNewest(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, LogRecord<TKey, TValue> record, bool found,
        in SessionView session)
    {
        bool live = found && !HoldsNoValue(record);
        if (operation.Kind == PendingKind.Read)
        {
            if (live)
            {
                OperationStatus read = ReadFrom(operation, record);
                CopyIfHot(operation, record, in session);
                return read;
            }

            // A chain that ran out below the begin address: compaction may have copied the key's record forward and
            // swung its entry since the read was decided (InternalRead's ChainEndedBelowBegin; a device read is a long window).
            return !found && !IsEntryUnchanged(operation, out _) ? Restart(operation, in session) : OperationStatus.NotFound;
        }

        if (!IsEntryUnchanged(operation, out IndexSlot slot))
        {
            return Restart(operation, in session);
        }

        // Upserts and deletes are blind: only reads and RMWs read the device.
        System.Diagnostics.Debug.Assert(operation.Kind == PendingKind.RMW, $"{operation.Kind} read a record");
        OperationStatus status = live
            ? CopyUpdateFrom(ref slot, in operation.Key, in operation.Input, record, operation.Expiry, in session)
            : CreateInitialRecord(ref slot, in operation.Key, in operation.Input, operation.Expiry, in session);
        return Finish(operation, status, in session);
    }

    private OperationStatus ReadFrom(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, LogRecord<TKey, TValue> record)
    {
        VarBytes scratch = default;
        _functions.SingleReader(in operation.Key, in operation.Input, in record.ValueRef(ref scratch), ref operation.Output);
        return OperationStatus.Success;
    }

    /// <summary>
    /// Whether the key's index entry still holds what it held when the read was decided: then no newer record of the
    /// key exists, and an update built on the record read from the device loses nothing.
    /// </summary>
    private bool IsEntryUnchanged(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, out IndexSlot slot)
    {
        return Index.TryFindEntry(HashOf(in operation.Key), out slot) && slot.Address == operation.Storage.EntryAddress;
    }

    /// <summary>
    /// A lost CAS after the read: start the operation over. No log space yet (or a new CPR phase): keep the record
    /// read, which the next attempt trusts only if the index entry is still unchanged; reading it again on every retry
    /// would starve the very flushes that make room (both go through the device).
    /// </summary>
    private OperationStatus Finish(
        PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, OperationStatus status, in SessionView session)
    {
        if (status == OperationStatus.RetryNow)
        {
            return Restart(operation, in session);
        }

        if (status is OperationStatus.RetryLater or OperationStatus.CrossVersion)
        {
            operation.HasRecord = true;
        }

        return status;
    }

    private OperationStatus Restart(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation, in SessionView session)
    {
        OperationStatus status;
        StorageRead storageRead;
        do
        {
            status = operation.Kind switch
            {
                PendingKind.RMW => InternalRMW(in operation.Key, in operation.Input, operation.Expiry, in session,
                    out storageRead),
                PendingKind.Delete => Blind(InternalDelete(in operation.Key, in session), out storageRead),
                PendingKind.Upsert => Blind(InternalUpsert(in operation.Key, in operation.Value, operation.Expiry,
                    in session), out storageRead),
                _ => InternalRead(in operation.Key, in operation.Input, ref operation.Output, ChainUnknown, out storageRead),
            };
        }
        while (status == OperationStatus.RetryNow);

        if (status == OperationStatus.RecordOnStorage)
        {
            operation.Storage = storageRead;
            operation.RecordSizeHint = 0;
        }

        return status;
    }

    /// <summary>The result of a blind update (upsert, delete) where any operation's may hold a storage read: none.</summary>
    internal static OperationStatus Blind(OperationStatus status, out StorageRead storageRead)
    {
        storageRead = default;
        return status;
    }

    private OperationStatus CopyUpdateFrom(
        ref IndexSlot slot, in TKey key, in TInput input, LogRecord<TKey, TValue> source, long expiry,
        in SessionView session)
    {
        OperationStatus appended = TryAppendRecord(in key, UpdatedLengthOf(source, in key, in input), in slot,
                tombstone: false, ExpiryAfterUpdate(source, expiry), in session, out long address,
                out LogRecord<TKey, TValue> record);
        return appended == OperationStatus.Success
            ? CopyAndLink(ref slot, in key, in input, source, address, record)
            : appended;
    }

    /// <summary>How much a first read of a variable-layout record of unknown size asks for (sector-rounded).</summary>
    private const int FirstVariableReadSize = 1024;

    private static unsafe LogRecord<TKey, TValue> RecordIn(PendingOperation<TKey, TValue, TInput, TOutput, TContext> operation)
    {
        byte* start = operation.Buffer!.Pointer;
        return new LogRecord<TKey, TValue>(start + operation.RecordOffset);
    }
}
