using System.Runtime.CompilerServices;

namespace HybridKV.Server.Protocol;

/// <summary>
/// Parses one command (a RESP array of bulk strings, as every Redis client sends) from contiguous bytes without
/// copying or allocating: it records where the arguments are, says "incomplete" without consuming anything when the
/// bytes end inside the command, and rejects whatever breaks the protocol or the limits before buffering it.
/// </summary>
internal static class RespParser
{
    // A length line longer than this (sign, digits and CRLF) is malformed rather than incomplete.
    private const int MaxLengthLine = 22;

    /// <summary>Parses the command at the start of <paramref name="buffer"/>.</summary>
    /// <param name="buffer">Received bytes, starting at a command.</param>
    /// <param name="arguments">Receives the arguments' places in <paramref name="buffer"/>.</param>
    /// <param name="maxArguments">The most arguments a command may have.</param>
    /// <param name="maxBulkLength">The longest argument allowed.</param>
    /// <param name="consumed">The command's length, when complete (an empty array is complete with no arguments).</param>
    /// <param name="error">Why the bytes are malformed (a RESP error message without the leading '-').</param>
    public static ParseStatus TryParse(ReadOnlySpan<byte> buffer, CommandArguments arguments, int maxArguments,
        long maxBulkLength, out int consumed, out string? error)
    {
        consumed = 0;
        error = null;
        arguments.Clear();
        if (buffer.IsEmpty)
        {
            return ParseStatus.Incomplete;
        }

        if (buffer[0] != (byte)'*')
        {
            error = ProtocolError($"expected '*', got '{Printable(buffer[0])}'");
            return ParseStatus.Malformed;
        }

        int position = 1;
        ParseStatus status = ReadLength(buffer, ref position, out long count);
        if (status != ParseStatus.Complete)
        {
            error = status == ParseStatus.Malformed ? ProtocolError("invalid multibulk length") : null;
            return status;
        }

        if (count <= 0)
        {
            // "*0" and "*-1": nothing to run, as Redis treats them.
            consumed = position;
            return ParseStatus.Complete;
        }

        if (count > maxArguments)
        {
            error = ProtocolError("invalid multibulk length");
            return ParseStatus.Malformed;
        }

        arguments.EnsureCapacity((int)count);
        for (long i = 0; i < count; i++)
        {
            if (position >= buffer.Length)
            {
                return ParseStatus.Incomplete;
            }

            if (buffer[position] != (byte)'$')
            {
                error = ProtocolError($"expected '$', got '{Printable(buffer[position])}'");
                return ParseStatus.Malformed;
            }

            position++;
            status = ReadLength(buffer, ref position, out long length);
            if (status != ParseStatus.Complete)
            {
                error = status == ParseStatus.Malformed ? ProtocolError("invalid bulk length") : null;
                return status;
            }

            if (length < 0 || length > maxBulkLength)
            {
                error = ProtocolError("invalid bulk length");
                return ParseStatus.Malformed;
            }

            if (buffer.Length - position < length + 2)
            {
                return ParseStatus.Incomplete;
            }

            int end = position + (int)length;
            if (buffer[end] != (byte)'\r' || buffer[end + 1] != (byte)'\n')
            {
                error = ProtocolError("bulk string not terminated by CRLF");
                return ParseStatus.Malformed;
            }

            arguments.Add(position, (int)length);
            position = end + 2;
        }

        consumed = position;
        return ParseStatus.Complete;
    }

    /// <summary>Reads "&lt;decimal&gt;\r\n" at <paramref name="position"/> (after the type byte) and moves past it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ParseStatus ReadLength(ReadOnlySpan<byte> buffer, ref int position, out long value)
    {
        value = 0;
        int start = position;
        bool negative = false;
        if (start < buffer.Length && buffer[start] == (byte)'-')
        {
            negative = true;
            start++;
        }

        int i = start;
        while (true)
        {
            if (i >= buffer.Length)
            {
                return i - position > MaxLengthLine ? ParseStatus.Malformed : ParseStatus.Incomplete;
            }

            byte b = buffer[i];
            if (b == (byte)'\r')
            {
                break;
            }

            if ((uint)(b - '0') > 9 || i - start >= 18)
            {
                // Not a digit, or more digits than any limit allows (and than a long holds).
                return ParseStatus.Malformed;
            }

            value = (value * 10) + (b - '0');
            i++;
        }

        if (i == start)
        {
            return ParseStatus.Malformed;
        }

        if (i + 1 >= buffer.Length)
        {
            return ParseStatus.Incomplete;
        }

        if (buffer[i + 1] != (byte)'\n')
        {
            return ParseStatus.Malformed;
        }

        if (negative)
        {
            value = -value;
        }

        position = i + 2;
        return ParseStatus.Complete;
    }

    private static string ProtocolError(string what) => "ERR Protocol error: " + what;

    // The byte as Redis would show it: printable ASCII as is, anything else as a hex escape (never raw input).
    private static string Printable(byte b) => b is >= 0x20 and < 0x7f and not (byte)'\'' ? ((char)b).ToString() : $"\\x{b:x2}";
}
