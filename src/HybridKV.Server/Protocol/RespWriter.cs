using System.Buffers;
using System.Buffers.Text;
using System.Runtime.CompilerServices;
using System.Text;

namespace HybridKV.Server.Protocol;

/// <summary>
/// Writes RESP2 or RESP3 replies into a connection's output, formatting numbers and lengths straight into the
/// output's memory: the one place that knows how a reply is framed.
/// </summary>
internal sealed class RespWriter
{
    // "$" + length digits + CRLF, or ":" + a long + CRLF.
    private const int MaxHeader = 24;

    private readonly IBufferWriter<byte> _output;

    /// <summary>Writes into <paramref name="output"/>.</summary>
    public RespWriter(IBufferWriter<byte> output)
    {
        _output = output;
    }

    /// <summary>The protocol version replies are framed in: 2 (the default) or 3 (after <c>HELLO 3</c>).</summary>
    public int Protocol { get; set; } = 2;

    /// <summary>+OK</summary>
    public void WriteOk() => WriteRaw("+OK\r\n"u8);

    /// <summary>A simple string: <paramref name="text"/> must hold no CR or LF.</summary>
    public void WriteSimpleString(ReadOnlySpan<byte> text) => WriteLine((byte)'+', text);

    /// <summary>An error reply; <paramref name="message"/> starts with its code (<c>ERR</c>, <c>WRONGTYPE</c>…).</summary>
    public void WriteError(ReadOnlySpan<byte> message) => WriteLine((byte)'-', message);

    /// <summary>A one-line reply: its type byte, <paramref name="text"/> (no CR or LF), CRLF.</summary>
    private void WriteLine(byte type, ReadOnlySpan<byte> text)
    {
        Span<byte> span = _output.GetSpan(text.Length + 3);
        span[0] = type;
        text.CopyTo(span[1..]);
        span[text.Length + 1] = (byte)'\r';
        span[text.Length + 2] = (byte)'\n';
        _output.Advance(text.Length + 3);
    }

    /// <summary>An error reply built at run time; CR and LF in it are replaced by spaces.</summary>
    public void WriteError(string message)
    {
        int length = Encoding.UTF8.GetByteCount(message);
        Span<byte> span = _output.GetSpan(length + 3);
        span[0] = (byte)'-';
        Encoding.UTF8.GetBytes(message, span[1..]);
        foreach (ref byte b in span.Slice(1, length))
        {
            if (b is (byte)'\r' or (byte)'\n')
            {
                b = (byte)' ';
            }
        }

        span[length + 1] = (byte)'\r';
        span[length + 2] = (byte)'\n';
        _output.Advance(length + 3);
    }

    /// <summary>An integer reply.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void WriteInteger(long value) => WritePrefixed((byte)':', value);

    /// <summary>A bulk string.</summary>
    public void WriteBulk(ReadOnlySpan<byte> value)
    {
        Span<byte> span = _output.GetSpan(MaxHeader + value.Length + 2);
        int header = FormatPrefixed(span, (byte)'$', value.Length);
        value.CopyTo(span[header..]);
        span[header + value.Length] = (byte)'\r';
        span[header + value.Length + 1] = (byte)'\n';
        _output.Advance(header + value.Length + 2);
    }

    /// <summary>A bulk string of UTF-8 text (not for the hot path).</summary>
    public void WriteBulk(string text) => WriteBulk(Encoding.UTF8.GetBytes(text));

    /// <summary>A bulk string holding a number's decimal digits.</summary>
    public void WriteBulk(long number)
    {
        Span<byte> digits = stackalloc byte[20];
        Utf8Formatter.TryFormat(number, digits, out int written);
        WriteBulk(digits[..written]);
    }

    /// <summary>The null reply: <c>$-1</c> in RESP2, <c>_</c> in RESP3.</summary>
    public void WriteNull() => WriteRaw(Protocol == 3 ? "_\r\n"u8 : "$-1\r\n"u8);

    /// <summary>The null array reply: <c>*-1</c> in RESP2, <c>_</c> in RESP3.</summary>
    public void WriteNullArray() => WriteRaw(Protocol == 3 ? "_\r\n"u8 : "*-1\r\n"u8);

    /// <summary>The header of an array of <paramref name="count"/> elements.</summary>
    public void WriteArrayHeader(int count) => WritePrefixed((byte)'*', count);

    /// <summary>The header of a map of <paramref name="count"/> pairs: <c>%</c> in RESP3, a flat array in RESP2.</summary>
    public void WriteMapHeader(int count)
    {
        if (Protocol == 3)
        {
            WritePrefixed((byte)'%', count);
        }
        else
        {
            WritePrefixed((byte)'*', 2 * (long)count);
        }
    }

    /// <summary>Bytes that are already a whole reply.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void WriteRaw(ReadOnlySpan<byte> reply)
    {
        Span<byte> span = _output.GetSpan(reply.Length);
        reply.CopyTo(span);
        _output.Advance(reply.Length);
    }

    private void WritePrefixed(byte prefix, long value)
    {
        Span<byte> span = _output.GetSpan(MaxHeader);
        _output.Advance(FormatPrefixed(span, prefix, value));
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int FormatPrefixed(Span<byte> span, byte prefix, long value)
    {
        span[0] = prefix;
        Utf8Formatter.TryFormat(value, span[1..], out int written);
        span[written + 1] = (byte)'\r';
        span[written + 2] = (byte)'\n';
        return written + 3;
    }
}
