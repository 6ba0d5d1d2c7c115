using System.Text;

namespace HybridKV.Generator.Emitting;

/// <summary>Writes C# source line by line with four-space indentation.</summary>
internal sealed class SourceWriter
{
    /// <summary>The attribute every forwarding method carries, so that the JIT sees through it.</summary>
    public const string AggressiveInlining =
        "[global::System.Runtime.CompilerServices.MethodImpl(" +
        "global::System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]";

    private readonly StringBuilder _text = new();
    private int _depth;

    public SourceWriter Line(string line = "")
    {
        if (line.Length > 0)
        {
            _text.Append(' ', _depth * 4).Append(line);
        }

        _text.Append('\n');
        return this;
    }

    public SourceWriter Open(string line)
    {
        Line(line);
        Line("{");
        _depth++;
        return this;
    }

    public SourceWriter Close(string suffix = "")
    {
        _depth--;
        return Line("}" + suffix);
    }

    public override string ToString() => _text.ToString();
}
