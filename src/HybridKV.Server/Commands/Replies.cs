using System.Buffers.Text;

namespace HybridKV.Server.Commands;

/// <summary>The standard error replies and argument parsing that several command families share.</summary>
internal static class Replies
{
    public static ReadOnlySpan<byte> NotInteger => "ERR value is not an integer or out of range"u8;
    public static ReadOnlySpan<byte> Overflow => "ERR increment or decrement would overflow"u8;
    public static ReadOnlySpan<byte> Syntax => "ERR syntax error"u8;
    public static ReadOnlySpan<byte> NoAuth => "NOAUTH Authentication required."u8;
    public static ReadOnlySpan<byte> Pong => "+PONG\r\n"u8;

    /// <summary>Parses a decimal long as Redis does (the whole argument, nothing else).</summary>
    public static bool TryParseLong(ReadOnlySpan<byte> argument, out long value) =>
        Utf8Parser.TryParse(argument, out value, out int consumed) && consumed == argument.Length && argument.Length > 0;

    /// <summary>ERR wrong number of arguments for 'name' command.</summary>
    public static string WrongArity(ReadOnlySpan<byte> name) =>
        $"ERR wrong number of arguments for '{System.Text.Encoding.UTF8.GetString(name).ToLowerInvariant()}' command";

    /// <summary>The time now, as record expiries count it.</summary>
    public static long NowMs() => DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
}
