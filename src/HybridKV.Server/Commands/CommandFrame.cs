using HybridKV.Server.Protocol;

namespace HybridKV.Server.Commands;

/// <summary>One parsed command: its bytes and where its arguments are (argument 0 is the command's name).</summary>
internal readonly ref struct CommandFrame
{
    private readonly ReadOnlySpan<byte> _bytes;
    private readonly CommandArguments _arguments;

    public CommandFrame(ReadOnlySpan<byte> bytes, CommandArguments arguments)
    {
        _bytes = bytes;
        _arguments = arguments;
    }

    /// <summary>The number of arguments, the name included.</summary>
    public int Count => _arguments.Count;

    /// <summary>Argument <paramref name="index"/>.</summary>
    public ReadOnlySpan<byte> this[int index] => _arguments.Get(_bytes, index);

    /// <summary>Copies the arguments out, for a command that runs asynchronously (off the hot path).</summary>
    public byte[][] ToArrays()
    {
        var copies = new byte[Count][];
        for (int i = 0; i < copies.Length; i++)
        {
            copies[i] = this[i].ToArray();
        }

        return copies;
    }
}
