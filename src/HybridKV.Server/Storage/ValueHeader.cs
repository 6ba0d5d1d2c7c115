using System.Buffers.Binary;
using System.Runtime.CompilerServices;

namespace HybridKV.Server.Storage;

/// <summary>
/// The 8 bytes in front of every value the server stores: when the value expires, or that the record stands for no
/// value at all (a placeholder).
/// </summary>
/// <remarks>
/// <para>The store keeps a record's expiry itself (it reads an expired value as not found and compaction drops it),
/// but it does not hand it to the callbacks, and <c>TTL</c> must read it. So the server repeats it here, writing both
/// from the same millisecond, so that they agree.</para>
/// <para>A placeholder exists because a read-modify-write always creates a missing key (its initial updater must
/// write something): a conditional command (<c>SET … XX</c>, <c>EXPIRE</c>) that finds its key deleted by another
/// connection between its existence check and its update leaves a placeholder, which every command reads as absent.</para>
/// <code>
///  63                                                 0
/// +----------------------------------------------------+
/// | 0: no expiry | &gt;0: expiry, Unix ms | -1: placeholder |
/// +----------------------------------------------------+   then the value's bytes
/// </code>
/// </remarks>
internal static class ValueHeader
{
    /// <summary>The header's size in bytes.</summary>
    public const int Size = sizeof(long);

    /// <summary>The header of a value without expiry.</summary>
    public const long NoExpiry = 0;

    /// <summary>The header of a placeholder: the key reads as absent.</summary>
    public const long Placeholder = -1;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long Read(ReadOnlySpan<byte> value) =>
        value.Length >= Size ? BinaryPrimitives.ReadInt64LittleEndian(value) : Placeholder;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void Write(Span<byte> value, long header) => BinaryPrimitives.WriteInt64LittleEndian(value, header);

    /// <summary>Whether a stored value is a live one: not a placeholder and not past its expiry.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsLive(long header) =>
        header == NoExpiry || (header > 0 && header > DateTimeOffset.UtcNow.ToUnixTimeMilliseconds());

    /// <summary>The value's bytes after the header.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static ReadOnlySpan<byte> Payload(ReadOnlySpan<byte> value) => value[Size..];
}
