using System.Runtime.CompilerServices;
using HybridKV.Devices;

namespace HybridKV.Operations;

/// <summary>The kinds of operation that can go pending.</summary>
internal enum PendingKind : byte
{
    Read,
    RMW,
    Delete,
    Upsert,
}

/// <summary>
/// An operation parked on its session until it can go on: retried from the start (an RMW that met the fuzzy region,
/// an operation that waited for log space, or one that waited behind an earlier pending operation of its session on
/// the same key), or continued with a record read from the device. Allocated only when an operation goes pending,
/// never on the in-memory fast path.
/// </summary>
internal sealed class PendingOperation<TKey, TValue, TInput, TOutput, TContext> : IDisposable
{
    /// <summary>
    /// Makes the operation the one just issued: everything a previous use left is reset. A session reuses finished
    /// operations (see <c>Session.Park</c>), so that an operation that goes to the device allocates no operation and
    /// no buffer.
    /// </summary>
    public void Start(PendingKind kind, long keyHash, in TKey key, in TValue value, in TInput input, in TOutput output,
        TContext context, long serialNo, long expiry,
        TaskCompletionSource<(Status Status, TOutput Output)>? completion, bool drivenInBackground)
    {
        Kind = kind;
        KeyHash = keyHash;
        Key = key;
        Value = value;
        Input = input;
        Output = output;
        Context = context;
        SerialNo = serialNo;
        Expiry = expiry;
        Completion = completion;
        DrivenInBackground = drivenInBackground;
        NextOnKey = null;
        FirstSharing = null;
        NextSharing = null;
        Storage = default;
        HasRecord = false;
        RecordOffset = 0;
        BytesRead = 0;
        RecordSizeHint = 0;
        IoError = null;
        // The caller's bytes are pinned only for the call that parked the operation: keep a copy of them.
        _ownedKey = typeof(TKey) == typeof(VarBytes) ? VarBytes.CopyToPinned(ref Unsafe.As<TKey, VarBytes>(ref Key)) : null;
        _ownedValue = typeof(TValue) == typeof(VarBytes) && kind == PendingKind.Upsert
            ? VarBytes.CopyToPinned(ref Unsafe.As<TValue, VarBytes>(ref Value))
            : null;
        _ownedInput = typeof(TInput) == typeof(VarBytes)
            ? VarBytes.CopyToPinned(ref Unsafe.As<TInput, VarBytes>(ref Input))
            : null;
    }

    /// <summary>Forgets what the finished operation referred to (its caller's context and data), keeping its buffer
    /// for the next use. Its completion stays until the next <see cref="Start"/>: the caller that parked an awaited
    /// operation reads the task after the attempt returns, when the operation may already be finished and kept.</summary>
    public void Clear()
    {
        Key = default!;
        Value = default!;
        Input = default!;
        Output = default!;
        Context = default!;
        IoError = null;
        NextOnKey = null;
        FirstSharing = null;
        NextSharing = null;
        _ownedKey = null;
        _ownedValue = null;
        _ownedInput = null;
        _onRecordRead = null;
    }

    // What a VarBytes key, value or input of this operation points at (pinned arrays, kept alive by these references).
    private byte[]? _ownedKey;
    private byte[]? _ownedValue;
    private byte[]? _ownedInput;

    // The device read in flight, and whom to tell when it lands; the continuation is made once per object.
    private System.Runtime.CompilerServices.ConfiguredValueTaskAwaitable.ConfiguredValueTaskAwaiter _read;
    private Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>>? _onRecordRead;
    private Action? _readLanded;

    /// <summary>
    /// Reads <paramref name="length"/> bytes at <paramref name="start"/> into <see cref="Buffer"/>, then (on the thread
    /// that completes the read: the device's own, so <paramref name="onRecordRead"/> must only hand the operation on)
    /// sets <see cref="HasRecord"/> and <see cref="IoError"/> and calls <paramref name="onRecordRead"/>. No
    /// allocation: the continuation is this object's, made once.
    /// </summary>
    public void ReadFromDevice(StorageDevice device, long start, int length,
        Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> onRecordRead)
    {
        _onRecordRead = onRecordRead;
        try
        {
#pragma warning disable CA2012 // Consumed exactly once: by GetResult in ReadLanded.
            _read = device.ReadAsync(start, Buffer!.Memory[..length], completeInline: true, CancellationToken.None)
                .ConfigureAwait(false).GetAwaiter();
#pragma warning restore CA2012
        }
#pragma warning disable CA1031 // The failure completes the operation with an error status.
        catch (Exception error)
#pragma warning restore CA1031
        {
            _read = default;
            RecordRead(error);
            return;
        }

        if (_read.IsCompleted)
        {
            ReadLanded();
        }
        else
        {
            _read.UnsafeOnCompleted(_readLanded ??= ReadLanded);
        }
    }

    private void ReadLanded()
    {
        Exception? failure = null;
        try
        {
            _read.GetResult();
        }
#pragma warning disable CA1031 // The failure completes the operation with an error status.
        catch (Exception error)
#pragma warning restore CA1031
        {
            failure = error;
        }

        _read = default;
        RecordRead(failure);
    }

    /// <summary>The record is in <see cref="Buffer"/> already (a read cache hit): calls
    /// <paramref name="onRecordRead"/> at once, as a device read would have.</summary>
    public void RecordAlreadyRead(Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> onRecordRead)
    {
        _onRecordRead = onRecordRead;
        RecordRead(failure: null);
    }

    private void RecordRead(Exception? failure)
    {
        IoError = failure;
        HasRecord = true;
        SharedRead = false;
        Action<PendingOperation<TKey, TValue, TInput, TOutput, TContext>> onRecordRead = _onRecordRead!;
        _onRecordRead = null;
        onRecordRead(this);
    }

    public PendingKind Kind { get; private set; }

    /// <summary>The key's 64-bit hash: what the session orders its pending operations on one key by.</summary>
    public long KeyHash { get; private set; }

    public TKey Key = default!;

    /// <summary>The value of an upsert; unused by the other kinds.</summary>
    public TValue Value = default!;

    /// <summary>The expiry an upsert or RMW gives the value it writes (see <see cref="ExpiryTime"/>).</summary>
    public long Expiry { get; private set; }

    public TInput Input = default!;

    public TOutput Output = default!;

    public TContext Context { get; private set; } = default!;

    /// <summary>The session serial number the operation took when it was issued.</summary>
    public long SerialNo { get; private set; }

    /// <summary>The operation whose device read landed before this one's (the session's stack of landed reads).</summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? NextDone { get; set; }

    /// <summary>The next pending operation of the same session on the same key, which waits for this one.</summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? NextOnKey { get; set; }

    /// <summary>Reads of the same record by the same session that wait for this operation's device read instead of
    /// making their own, linked by their <see cref="NextSharing"/> (see <see cref="ShareRecordWith"/>).</summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? FirstSharing { get; set; }

    /// <summary>The next read sharing the same device read.</summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? NextSharing { get; set; }

    /// <summary>
    /// Gives <paramref name="sharing"/>, a read that decided on the same record while this operation's device read
    /// was in flight, what that read landed: the bytes, or the error. It then goes on as if it had read them itself.
    /// </summary>
    public void ShareRecordWith(PendingOperation<TKey, TValue, TInput, TOutput, TContext> sharing)
    {
        if (IoError is null)
        {
            Buffer!.Span[..BytesRead].CopyTo(sharing.EnsureBuffer(BytesRead, Buffer.Alignment).Span);
        }

        sharing.RecordOffset = RecordOffset;
        sharing.BytesRead = BytesRead;
        sharing.IoError = IoError;
        sharing.HasRecord = true;
        sharing.SharedRead = true;
    }

    /// <summary>Whether <see cref="Buffer"/> holds what another operation's device read landed
    /// (<see cref="ShareRecordWith"/>) rather than this operation's own read.</summary>
    public bool SharedRead { get; private set; }

    /// <summary>
    /// <see cref="Buffer"/>, replaced by a new one of <paramref name="length"/> bytes aligned to
    /// <paramref name="alignment"/> if it is missing or shorter; kept across uses, so that a read allocates nothing.
    /// </summary>
    public AlignedBuffer EnsureBuffer(int length, int alignment)
    {
        if (Buffer is null || Buffer.Length < length)
        {
            ((IDisposable?)Buffer)?.Dispose();
            Buffer = new AlignedBuffer(length, alignment);
        }

        return Buffer;
    }

    /// <summary>Where the record being (or to be) read lives, and what the index held when the read was decided.</summary>
    public StorageRead Storage { get; set; }

    /// <summary>Whether <see cref="Buffer"/> holds the record at <see cref="Storage"/> (or <see cref="IoError"/> is set).</summary>
    public bool HasRecord { get; set; }

    /// <summary>The sector-aligned bytes read from the device.</summary>
    public AlignedBuffer? Buffer { get; set; }

    /// <summary>Where the record starts in <see cref="Buffer"/>.</summary>
    public int RecordOffset { get; set; }

    /// <summary>How many bytes of <see cref="Buffer"/> the last read filled.</summary>
    public int BytesRead { get; set; }

    /// <summary>The size of a variable-layout record learned from a first, too short read; 0 if not known.</summary>
    public int RecordSizeHint { get; set; }

    /// <summary>Why the device read failed, if it did.</summary>
    public Exception? IoError { get; set; }

    /// <summary>Set for operations whose caller waits for a task (an asynchronous method, or a blocking read that
    /// waits inside the call) rather than for <c>CompletePending</c>.</summary>
    public TaskCompletionSource<(Status Status, TOutput Output)>? Completion { get; private set; }

    /// <summary>Whether the session's background driver finishes this operation (an asynchronous method's caller
    /// may be awaiting it while it issues others); otherwise the caller's own <c>CompletePending</c> or wait does.</summary>
    public bool DrivenInBackground { get; private set; }

    public void Dispose()
    {
        ((IDisposable?)Buffer)?.Dispose();
        Buffer = null;
    }
}
