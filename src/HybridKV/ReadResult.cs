namespace HybridKV;

/// <summary>The outcome of an asynchronous read.</summary>
/// <param name="Status"><see cref="HybridKV.Status.Ok"/> or <see cref="HybridKV.Status.NotFound"/>.</param>
/// <param name="Output">What the reader callback produced (default when not found).</param>
/// <typeparam name="TOutput">The store's output type.</typeparam>
public readonly record struct ReadResult<TOutput>(Status Status, TOutput Output);
