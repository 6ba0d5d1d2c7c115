namespace HybridKV.Server.Storage;

/// <summary>
/// One connection's slot for what the store's callbacks found, reset before each operation. A concurrent reader may
/// run more than once: each run overwrites every field it sets, so the last run's result stands.
/// </summary>
internal sealed class CommandResults
{
    // Grows to the largest value read so far on this connection; starts small.
    private byte[] _value = new byte[256];

    /// <summary>Whether the key held a live value.</summary>
    public bool Found { get; set; }

    /// <summary>Whether a conditional update took effect.</summary>
    public bool Applied { get; set; }

    /// <summary>The value's integer (INCR), length (STRLEN, APPEND) or expiry header (TTL).</summary>
    public long Number { get; set; }

    /// <summary>The value was not an integer: nothing was changed.</summary>
    public bool NotInteger { get; set; }

    /// <summary>The increment would overflow: nothing was changed.</summary>
    public bool Overflow { get; set; }

    /// <summary>The length of the value copied to <see cref="Value"/>.</summary>
    public int ValueLength { get; private set; }

    /// <summary>The value copied by a read (GET) or by SET … GET.</summary>
    public ReadOnlySpan<byte> Value => _value.AsSpan(0, ValueLength);

    /// <summary>Clears the slot before an operation.</summary>
    public void Reset()
    {
        Found = false;
        Applied = false;
        NotInteger = false;
        Overflow = false;
        Number = 0;
        ValueLength = 0;
    }

    /// <summary>Copies a value in, growing the buffer for a longer value than any before.</summary>
    public void SetValue(ReadOnlySpan<byte> value)
    {
        if (value.Length > _value.Length)
        {
            _value = new byte[Math.Max(value.Length, _value.Length * 2)];
        }

        value.CopyTo(_value);
        ValueLength = value.Length;
    }
}
