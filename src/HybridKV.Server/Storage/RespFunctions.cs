using System.Buffers.Text;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace HybridKV.Server.Storage;

/// <summary>
/// The callbacks of the server's store: byte-string keys, values with a <see cref="ValueHeader"/>, and the Redis
/// string commands as reads and read-modify-writes whose results go to the input's <see cref="CommandResults"/>.
/// </summary>
/// <remarks>
/// Updaters treat only a placeholder as absent; an expired value never reaches them, because the store keeps the same
/// expiry on the record and starts a new value instead. Readers check the header's expiry as well, which costs one clock
/// read for values that have one.
/// </remarks>
internal readonly struct RespFunctions : IFunctions<VarBytes, VarBytes, RespInput, Empty, Empty>
{
    // The longest decimal long, with its sign.
    private const int MaxDigits = 20;

    /// <inheritdoc/>
    public long GetHashCode64(in VarBytes key) => KeyHashing.HashSpan(key.AsReadOnlySpan());

    /// <inheritdoc/>
    public bool KeyEquals(in VarBytes first, in VarBytes second) =>
        first.AsReadOnlySpan().SequenceEqual(second.AsReadOnlySpan());

    /// <inheritdoc/>
    public void SingleReader(in VarBytes key, in RespInput input, in VarBytes value, ref Empty output) =>
        Read(in input, value.AsReadOnlySpan());

    /// <inheritdoc/>
    public void ConcurrentReader(in VarBytes key, in RespInput input, in VarBytes value, ref Empty output) =>
        Read(in input, value.AsReadOnlySpan());

    /// <inheritdoc/>
    public void SingleWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        source.AsReadOnlySpan().CopyTo(destination.AsSpan());

    /// <inheritdoc/>
    public void ConcurrentWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        source.AsReadOnlySpan().CopyTo(destination.AsSpan());

    /// <inheritdoc/>
    public int GetInitialValueLength(in VarBytes key, in RespInput input) => input.Operation switch
    {
        RespOperation.IncrementBy => ValueHeader.Size + FormattedLength(input.Number),
        RespOperation.SetIfPresent or RespOperation.SetExpiry or RespOperation.Remove or RespOperation.TakeAndRemove =>
            ValueHeader.Size,
        _ => ValueHeader.Size + input.DataLength,
    };

    /// <inheritdoc/>
    public int GetUpdatedValueLength(in VarBytes key, in RespInput input, in VarBytes value)
    {
        ReadOnlySpan<byte> old = value.AsReadOnlySpan();
        if (ValueHeader.Read(old) == ValueHeader.Placeholder)
        {
            return GetInitialValueLength(in key, in input);
        }

        switch (input.Operation)
        {
            case RespOperation.IncrementBy:
                return TryIncrement(ValueHeader.Payload(old), input.Number, out long sum) == IncrementOutcome.Done
                    ? ValueHeader.Size + FormattedLength(sum)
                    : old.Length;
            case RespOperation.Append:
                return old.Length + input.DataLength;
            case RespOperation.SetIfPresent:
            case RespOperation.SetAndGet:
                return ValueHeader.Size + input.DataLength;
            case RespOperation.Remove:
            case RespOperation.TakeAndRemove:
                return ValueHeader.Size;
            default:
                return old.Length;
        }
    }

    /// <inheritdoc/>
    public void InitialUpdater(in VarBytes key, in RespInput input, ref VarBytes value)
    {
        CommandResults results = input.Results;
        Span<byte> destination = value.AsSpan();
        switch (input.Operation)
        {
            case RespOperation.IncrementBy:
                ValueHeader.Write(destination, ValueHeader.NoExpiry);
                Format(input.Number, destination[ValueHeader.Size..]);
                results.Number = input.Number;
                break;
            case RespOperation.SetIfPresent:
            case RespOperation.SetExpiry:
            case RespOperation.Remove:
            case RespOperation.TakeAndRemove:
                ValueHeader.Write(destination, ValueHeader.Placeholder);
                results.Applied = false;
                results.Found = false;
                break;
            default:
                // Append, SetIfAbsent, SetAndGet: the value is the data.
                ValueHeader.Write(destination, input.Header);
                input.DataSpan.CopyTo(destination[ValueHeader.Size..]);
                results.Number = input.DataLength;
                results.Applied = true;
                results.Found = false;
                break;
        }
    }

    /// <inheritdoc/>
    public void InPlaceUpdater(in VarBytes key, in RespInput input, ref VarBytes value) =>
        Update(in key, in input, value.AsReadOnlySpan(), ref value, inPlace: true);

    /// <inheritdoc/>
    public void CopyUpdater(in VarBytes key, in RespInput input, in VarBytes oldValue, ref VarBytes newValue) =>
        Update(in key, in input, oldValue.AsReadOnlySpan(), ref newValue, inPlace: false);

    /// <inheritdoc/>
    public void ReadCompletionCallback(in VarBytes key, in RespInput input, in Empty output, Empty context, Status status)
    {
    }

    /// <inheritdoc/>
    public void RMWCompletionCallback(in VarBytes key, in RespInput input, Empty context, Status status)
    {
    }

    /// <inheritdoc/>
    public void DeleteCompletionCallback(in VarBytes key, Empty context, Status status)
    {
    }

    private static void Read(in RespInput input, ReadOnlySpan<byte> value)
    {
        CommandResults results = input.Results;
        long header = ValueHeader.Read(value);
        if (!ValueHeader.IsLive(header))
        {
            results.Found = false;
            return;
        }

        results.Found = true;
        switch (input.Operation)
        {
            case RespOperation.Get:
                results.SetValue(ValueHeader.Payload(value));
                break;
            case RespOperation.Length:
                results.Number = value.Length - ValueHeader.Size;
                break;
            case RespOperation.Expiry:
                results.Number = header;
                break;
        }
    }

    /// <summary>
    /// An update of an existing record, in place (<paramref name="old"/> is <paramref name="value"/>'s bytes before
    /// the update) or into a new record (whose length <see cref="GetUpdatedValueLength"/> chose).
    /// </summary>
    private void Update(in VarBytes key, in RespInput input, ReadOnlySpan<byte> old, ref VarBytes value, bool inPlace)
    {
        CommandResults results = input.Results;
        long header = ValueHeader.Read(old);
        if (header == ValueHeader.Placeholder)
        {
            value.Length = GetInitialValueLength(in key, in input);
            InitialUpdater(in key, in input, ref value);
            return;
        }

        switch (input.Operation)
        {
            case RespOperation.IncrementBy:
                IncrementOutcome outcome = TryIncrement(ValueHeader.Payload(old), input.Number, out long sum);
                if (outcome != IncrementOutcome.Done)
                {
                    results.NotInteger = outcome == IncrementOutcome.NotInteger;
                    results.Overflow = outcome == IncrementOutcome.Overflow;
                    Keep(old, ref value, inPlace);
                    return;
                }

                value.Length = ValueHeader.Size + FormattedLength(sum);
                ValueHeader.Write(value.AsSpan(), header);
                Format(sum, value.AsSpan()[ValueHeader.Size..]);
                results.Number = sum;
                return;
            case RespOperation.Append:
                int oldLength = old.Length;
                if (!inPlace)
                {
                    old.CopyTo(value.AsSpan());
                }

                value.Length = oldLength + input.DataLength;
                input.DataSpan.CopyTo(value.AsSpan()[oldLength..]);
                results.Number = value.Length - ValueHeader.Size;
                return;
            case RespOperation.SetIfAbsent:
                // Another connection created the key after the command checked: SET NX GET replies with its value.
                results.SetValue(ValueHeader.Payload(old));
                results.Found = true;
                results.Applied = false;
                Keep(old, ref value, inPlace);
                return;
            case RespOperation.SetAndGet:
            case RespOperation.SetIfPresent:
                // The old value is copied out before the new one overwrites it (in place they share the bytes).
                results.SetValue(ValueHeader.Payload(old));
                results.Found = true;
                results.Applied = true;
                value.Length = ValueHeader.Size + input.DataLength;
                ValueHeader.Write(value.AsSpan(), input.Header);
                input.DataSpan.CopyTo(value.AsSpan()[ValueHeader.Size..]);
                return;
            case RespOperation.SetExpiry:
                Keep(old, ref value, inPlace);
                ValueHeader.Write(value.AsSpan(), input.Header);
                results.Applied = true;
                return;
            case RespOperation.TakeAndRemove:
            case RespOperation.Remove:
                // The store never passes an expired value to an updater, but the header's copy of the expiry may
                // have passed since it checked: such a value counts as gone already, as a read would have said.
                results.Found = ValueHeader.IsLive(header);
                if (results.Found && input.Operation == RespOperation.TakeAndRemove)
                {
                    results.SetValue(ValueHeader.Payload(old));
                }

                results.Applied = results.Found;
                value.Length = ValueHeader.Size;
                ValueHeader.Write(value.AsSpan(), ValueHeader.Placeholder);
                return;
            default:
                Keep(old, ref value, inPlace);
                return;
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void Keep(ReadOnlySpan<byte> old, ref VarBytes value, bool inPlace)
    {
        if (!inPlace)
        {
            old.CopyTo(value.AsSpan());
        }
    }

    private enum IncrementOutcome
    {
        Done,
        NotInteger,
        Overflow,
    }

    /// <summary>Parses a value as Redis does for INCR (a decimal long, nothing else) and adds to it.</summary>
    private static IncrementOutcome TryIncrement(ReadOnlySpan<byte> payload, long increment, out long sum)
    {
        sum = 0;
        if (payload.Length is 0 or > MaxDigits ||
            !Utf8Parser.TryParse(payload, out long current, out int consumed) || consumed != payload.Length)
        {
            return IncrementOutcome.NotInteger;
        }

        sum = unchecked(current + increment);
        // Overflow: both operands have the same sign and the sum the other one.
        return ((current ^ sum) & (increment ^ sum)) < 0 ? IncrementOutcome.Overflow : IncrementOutcome.Done;
    }

    private static int FormattedLength(long number)
    {
        Span<byte> digits = stackalloc byte[MaxDigits];
        number.TryFormat(digits, out int written, default, CultureInfo.InvariantCulture);
        return written;
    }

    private static void Format(long number, Span<byte> destination) =>
        number.TryFormat(destination, out _, default, CultureInfo.InvariantCulture);
}
