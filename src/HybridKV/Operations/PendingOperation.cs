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
    public PendingOperation(PendingKind kind, long keyHash, in TKey key, in TValue value, in TInput input, in TOutput output,
        TContext context)
    {
        Kind = kind;
        KeyHash = keyHash;
        Key = key;
        Value = value;
        Input = input;
        Output = output;
        Context = context;
        // The caller's bytes are pinned only for the call that parked the operation: keep a copy of them.
        if (typeof(TKey) == typeof(VarBytes))
        {
            _ownedKey = VarBytes.CopyToPinned(ref Unsafe.As<TKey, VarBytes>(ref Key));
        }

        if (typeof(TValue) == typeof(VarBytes) && kind == PendingKind.Upsert)
        {
            _ownedValue = VarBytes.CopyToPinned(ref Unsafe.As<TValue, VarBytes>(ref Value));
        }

        if (typeof(TInput) == typeof(VarBytes))
        {
            _ownedInput = VarBytes.CopyToPinned(ref Unsafe.As<TInput, VarBytes>(ref Input));
        }
    }

    // What a VarBytes key, value or input of this operation points at (pinned arrays, kept alive by these references).
    private readonly byte[]? _ownedKey;
    private readonly byte[]? _ownedValue;
    private readonly byte[]? _ownedInput;

    public PendingKind Kind { get; }

    /// <summary>The key's 64-bit hash: what the session orders its pending operations on one key by.</summary>
    public long KeyHash { get; }

    public TKey Key;

    /// <summary>The value of an upsert; unused by the other kinds.</summary>
    public TValue Value;

    /// <summary>The expiry an upsert or RMW gives the value it writes (see <see cref="ExpiryTime"/>).</summary>
    public long Expiry { get; init; }

    public TInput Input;

    public TOutput Output;

    public TContext Context { get; }

    /// <summary>The session serial number the operation took when it was issued.</summary>
    public long SerialNo { get; init; }

    /// <summary>The next pending operation of the same session on the same key, which waits for this one.</summary>
    public PendingOperation<TKey, TValue, TInput, TOutput, TContext>? NextOnKey { get; set; }

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
    public TaskCompletionSource<(Status Status, TOutput Output)>? Completion { get; set; }

    /// <summary>Whether the session's background driver finishes this operation (an asynchronous method's caller
    /// may be awaiting it while it issues others); otherwise the caller's own <c>CompletePending</c> or wait does.</summary>
    public bool DrivenInBackground { get; init; }

    public void Dispose()
    {
        ((IDisposable?)Buffer)?.Dispose();
        Buffer = null;
    }
}
