namespace HybridKV.Tests.Support;

/// <summary>How <see cref="CountFunctions"/> hashes keys, to force the index into its rarer paths.</summary>
public enum HashMode
{
    /// <summary>A well-mixed hash.</summary>
    Mixed,

    /// <summary>Every key in bucket 0 with one of 32 tags: overflow buckets and shared chains.</summary>
    FewTagsOneBucket,

    /// <summary>Every key has the same hash: one chain holds every key.</summary>
    Constant,

    /// <summary>Keys a million apart share a hash: a key never written has a chain to follow (its twin's).</summary>
    TwinsAMillionApart,
}

/// <summary>
/// The papers' count store: long keys and values, RMW adds the input. In-place callbacks use atomic instructions,
/// as FASTER appendix E asks of concurrent callbacks.
/// </summary>
public struct CountFunctions : IFunctions<long, long, long, long, CountContext?>
{
    /// <summary>An input or upserted value that makes every writer and updater throw, as a buggy callback would.</summary>
    public const long Poison = long.MinValue + 7;

    public HashMode Mode { get; }

    public CountFunctions(HashMode mode) => Mode = mode;

    public readonly long GetHashCode64(in long key) => Mode switch
    {
        HashMode.FewTagsOneBucket => (key & 31) << 48,
        HashMode.Constant => 42L << 48,
        HashMode.TwinsAMillionApart => KeyHashing.HashBytes(key % 1_000_000),
        _ => KeyHashing.HashBytes(in key),
    };

    public readonly bool KeyEquals(in long first, in long second) => first == second;

    public readonly void SingleReader(in long key, in long input, in long value, ref long output) => output = value;

    public readonly void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
        output = Volatile.Read(in value);

    public readonly void SingleWriter(in long key, in long source, ref long destination) =>
        destination = source == Poison ? throw new PoisonException(key) : source;

    public readonly void ConcurrentWriter(in long key, in long source, ref long destination) =>
        Volatile.Write(ref destination, source == Poison ? throw new PoisonException(key) : source);

    public readonly void InitialUpdater(in long key, in long input, ref long value) =>
        value = input == Poison ? throw new PoisonException(key) : input;

    public readonly void InPlaceUpdater(in long key, in long input, ref long value) =>
        Interlocked.Add(ref value, input == Poison ? throw new PoisonException(key) : input);

    public readonly void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
        newValue = oldValue + (input == Poison ? throw new PoisonException(key) : input);

    public readonly void ReadCompletionCallback(
        in long key, in long input, in long output, CountContext? context, Status status) =>
        context?.Completed(status, output);

    public readonly void RMWCompletionCallback(in long key, in long input, CountContext? context, Status status) =>
        context?.Completed(status);

    public readonly void DeleteCompletionCallback(in long key, CountContext? context, Status status) =>
        context?.Completed(status);
}

/// <summary>What a callback of <see cref="CountFunctions"/> throws for <see cref="CountFunctions.Poison"/>.</summary>
public sealed class PoisonException(long key) : Exception($"The callback refused key {key}.");

/// <summary>Records what completion callbacks reported.</summary>
public sealed class CountContext
{
    /// <summary>Makes the completion callback throw after recording, as a buggy callback would.</summary>
    public bool ThrowOnCompletion { get; init; }

    private int _completions;

    public int Completions => Volatile.Read(ref _completions);

    public Status LastStatus { get; private set; } = Status.Pending;

    /// <summary>The output a pending read completed with.</summary>
    public long Output { get; private set; }

    public void Completed(Status status, long output = 0)
    {
        LastStatus = status;
        Output = output;
        Interlocked.Increment(ref _completions);
        if (ThrowOnCompletion)
        {
            throw new PoisonException(-1);
        }
    }
}
