namespace HybridKV.Operations;

/// <summary>The kinds of operation that can go pending.</summary>
internal enum PendingKind : byte
{
    Read,
    RMW,
}

/// <summary>
/// An operation parked on its session until CompletePending retries it. Allocated only when an operation goes pending,
/// never on the in-memory fast path.
/// </summary>
internal sealed class PendingOperation<TKey, TInput, TOutput, TContext>
{
    public PendingOperation(PendingKind kind, in TKey key, in TInput input, in TOutput output, TContext context)
    {
        Kind = kind;
        Key = key;
        Input = input;
        Output = output;
        Context = context;
    }

    public PendingKind Kind { get; }

    public TKey Key;

    public TInput Input;

    public TOutput Output;

    public TContext Context { get; }
}
