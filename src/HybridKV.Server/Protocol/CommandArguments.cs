namespace HybridKV.Server.Protocol;

/// <summary>
/// Where the arguments of the command being parsed are, as offsets into its frame: one per connection, reused for
/// every command, grown (up to the argument limit) only by a command with more arguments than any before.
/// </summary>
internal sealed class CommandArguments
{
    private int[] _offsets = new int[16];
    private int[] _lengths = new int[16];

    /// <summary>The number of arguments, the command's name included.</summary>
    public int Count { get; private set; }

    /// <summary>Forgets the previous command's arguments.</summary>
    public void Clear() => Count = 0;

    /// <summary>Makes room for <paramref name="count"/> arguments.</summary>
    public void EnsureCapacity(int count)
    {
        if (count > _offsets.Length)
        {
            int size = Math.Max(count, _offsets.Length * 2);
            Array.Resize(ref _offsets, size);
            Array.Resize(ref _lengths, size);
        }
    }

    /// <summary>Adds an argument at <paramref name="offset"/> of the frame.</summary>
    public void Add(int offset, int length)
    {
        _offsets[Count] = offset;
        _lengths[Count] = length;
        Count++;
    }

    /// <summary>The bytes of argument <paramref name="index"/> in <paramref name="frame"/>.</summary>
    public ReadOnlySpan<byte> Get(ReadOnlySpan<byte> frame, int index) => frame.Slice(_offsets[index], _lengths[index]);

    /// <summary>Where argument <paramref name="index"/> starts in its frame.</summary>
    public int OffsetOf(int index) => _offsets[index];

    /// <summary>The length of argument <paramref name="index"/>.</summary>
    public int LengthOf(int index) => _lengths[index];
}
