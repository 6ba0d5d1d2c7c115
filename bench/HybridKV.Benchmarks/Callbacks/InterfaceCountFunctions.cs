namespace HybridKV.Benchmarks.Callbacks;

/// <summary>
/// The count store's callbacks behind an interface, as a library without static binding would call them: the
/// engine's struct holds an <see cref="IFunctions{TKey, TValue, TInput, TOutput, TContext}"/> object and every
/// callback is an interface call on it.
/// </summary>
internal readonly struct InterfaceCountFunctions(IFunctions<long, long, long, long, Empty> callbacks)
    : IFunctions<long, long, long, long, Empty>
{
    private readonly IFunctions<long, long, long, long, Empty> _callbacks = callbacks;

    public static InterfaceCountFunctions Create() => new(new CountCallbacks());

    public long GetHashCode64(in long key) => _callbacks.GetHashCode64(in key);

    public bool KeyEquals(in long first, in long second) => _callbacks.KeyEquals(in first, in second);

    public void SingleReader(in long key, in long input, in long value, ref long output) =>
        _callbacks.SingleReader(in key, in input, in value, ref output);

    public void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
        _callbacks.ConcurrentReader(in key, in input, in value, ref output);

    public void SingleWriter(in long key, in long source, ref long destination) =>
        _callbacks.SingleWriter(in key, in source, ref destination);

    public void ConcurrentWriter(in long key, in long source, ref long destination) =>
        _callbacks.ConcurrentWriter(in key, in source, ref destination);

    public void InitialUpdater(in long key, in long input, ref long value) =>
        _callbacks.InitialUpdater(in key, in input, ref value);

    public void InPlaceUpdater(in long key, in long input, ref long value) =>
        _callbacks.InPlaceUpdater(in key, in input, ref value);

    public void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
        _callbacks.CopyUpdater(in key, in input, in oldValue, ref newValue);

    public void ReadCompletionCallback(in long key, in long input, in long output, Empty context, Status status) =>
        _callbacks.ReadCompletionCallback(in key, in input, in output, context, status);

    public void RMWCompletionCallback(in long key, in long input, Empty context, Status status) =>
        _callbacks.RMWCompletionCallback(in key, in input, context, status);

    public void DeleteCompletionCallback(in long key, Empty context, Status status) =>
        _callbacks.DeleteCompletionCallback(in key, context, status);

    /// <summary>The callbacks as a class: what the engine reaches only through the interface.</summary>
    private sealed class CountCallbacks : IFunctions<long, long, long, long, Empty>
    {
        public long GetHashCode64(in long key) => default(CountFunctions).GetHashCode64(in key);

        public bool KeyEquals(in long first, in long second) => default(CountFunctions).KeyEquals(in first, in second);

        public void SingleReader(in long key, in long input, in long value, ref long output) =>
            default(CountFunctions).SingleReader(in key, in input, in value, ref output);

        public void ConcurrentReader(in long key, in long input, in long value, ref long output) =>
            default(CountFunctions).ConcurrentReader(in key, in input, in value, ref output);

        public void SingleWriter(in long key, in long source, ref long destination) =>
            default(CountFunctions).SingleWriter(in key, in source, ref destination);

        public void ConcurrentWriter(in long key, in long source, ref long destination) =>
            default(CountFunctions).ConcurrentWriter(in key, in source, ref destination);

        public void InitialUpdater(in long key, in long input, ref long value) =>
            default(CountFunctions).InitialUpdater(in key, in input, ref value);

        public void InPlaceUpdater(in long key, in long input, ref long value) =>
            default(CountFunctions).InPlaceUpdater(in key, in input, ref value);

        public void CopyUpdater(in long key, in long input, in long oldValue, ref long newValue) =>
            default(CountFunctions).CopyUpdater(in key, in input, in oldValue, ref newValue);

        public void ReadCompletionCallback(in long key, in long input, in long output, Empty context, Status status) =>
            default(CountFunctions).ReadCompletionCallback(in key, in input, in output, context, status);

        public void RMWCompletionCallback(in long key, in long input, Empty context, Status status) =>
            default(CountFunctions).RMWCompletionCallback(in key, in input, context, status);

        public void DeleteCompletionCallback(in long key, Empty context, Status status) =>
            default(CountFunctions).DeleteCompletionCallback(in key, context, status);
    }
}
