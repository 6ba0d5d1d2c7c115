namespace HybridKV;

/// <summary>
/// Functions for a store of byte-sequence keys and values: reads copy the value out (<see cref="VarBytesOutput"/>),
/// upserts store it, and an RMW appends its input to the value (creating it if absent), in place while the record has
/// room, otherwise into a new record.
/// </summary>
/// <example>
/// <code>
/// using var store = new HybridKVStore&lt;VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions&gt;(settings);
/// using var session = store.NewSession();
/// session.Upsert("user:42", "{\"name\":\"Ada\"}"u8);
/// session.Read("user:42", out IMemoryOwner&lt;byte&gt;? value);
/// </code>
/// </example>
public readonly struct VarBytesFunctions : IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
{
    /// <inheritdoc/>
    public long GetHashCode64(in VarBytes key) => KeyHashing.HashSpan(key.AsReadOnlySpan());

    /// <inheritdoc/>
    public bool KeyEquals(in VarBytes first, in VarBytes second) =>
        first.AsReadOnlySpan().SequenceEqual(second.AsReadOnlySpan());

    /// <inheritdoc/>
    public void SingleReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
        output.SetValue(value.AsReadOnlySpan());

    /// <inheritdoc/>
    public void ConcurrentReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
        output.SetValue(value.AsReadOnlySpan());

    /// <inheritdoc/>
    public void SingleWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        source.AsReadOnlySpan().CopyTo(destination.AsSpan());

    /// <inheritdoc/>
    public void ConcurrentWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        source.AsReadOnlySpan().CopyTo(destination.AsSpan());

    /// <inheritdoc/>
    public int GetInitialValueLength(in VarBytes key, in VarBytes input) => input.Length;

    /// <inheritdoc/>
    public int GetUpdatedValueLength(in VarBytes key, in VarBytes input, in VarBytes value) => value.Length + input.Length;

    /// <inheritdoc/>
    public void InitialUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
        input.AsReadOnlySpan().CopyTo(value.AsSpan());

    /// <inheritdoc/>
    public void InPlaceUpdater(in VarBytes key, in VarBytes input, ref VarBytes value)
    {
        int oldLength = value.Length;
        value.Length = oldLength + input.Length;
        input.AsReadOnlySpan().CopyTo(value.AsSpan()[oldLength..]);
    }

    /// <inheritdoc/>
    public void CopyUpdater(in VarBytes key, in VarBytes input, in VarBytes oldValue, ref VarBytes newValue)
    {
        oldValue.AsReadOnlySpan().CopyTo(newValue.AsSpan());
        input.AsReadOnlySpan().CopyTo(newValue.AsSpan()[oldValue.Length..]);
    }

    /// <inheritdoc/>
    public void ReadCompletionCallback(
        in VarBytes key, in VarBytes input, in VarBytesOutput output, Empty context, Status status)
    {
    }

    /// <inheritdoc/>
    public void RMWCompletionCallback(in VarBytes key, in VarBytes input, Empty context, Status status)
    {
    }

    /// <inheritdoc/>
    public void DeleteCompletionCallback(in VarBytes key, Empty context, Status status)
    {
    }
}
