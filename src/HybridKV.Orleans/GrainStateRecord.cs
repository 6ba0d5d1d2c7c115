using System.Buffers.Binary;
using System.Globalization;

namespace HybridKV.Orleans;

/// <summary>
/// A grain's state as the store holds it: its version (the ETag), whether it exists (a cleared state keeps its
/// version, so that versions never repeat and a writer holding an ETag from before the clear is refused), and the
/// serialized state.
/// </summary>
/// <remarks>
/// Layout, little-endian:
/// <code>
/// | version: 8 bytes | flags: 1 byte (bit 0: exists) | state: the rest |
/// </code>
/// </remarks>
internal static class GrainStateRecord
{
    public const int HeaderSize = 9;
    private const byte Exists = 1;

    /// <summary>Writes a record holding <paramref name="state"/> (or, when null, a cleared state).</summary>
    public static byte[] Create(long version, ReadOnlySpan<byte> state, bool exists)
    {
        byte[] record = new byte[HeaderSize + state.Length];
        BinaryPrimitives.WriteInt64LittleEndian(record, version);
        record[8] = exists ? Exists : (byte)0;
        state.CopyTo(record.AsSpan(HeaderSize));
        return record;
    }

    /// <summary>Reads a record's header.</summary>
    /// <exception cref="InvalidDataException">The record is shorter than its header.</exception>
    public static (long Version, bool Exists) ReadHeader(ReadOnlySpan<byte> record)
    {
        if (record.Length < HeaderSize)
        {
            throw new InvalidDataException(
                $"A grain state record of {record.Length} bytes is shorter than its {HeaderSize}-byte header: the " +
                "store holds something this provider did not write.");
        }

        return (BinaryPrimitives.ReadInt64LittleEndian(record), (record[8] & Exists) != 0);
    }

    /// <summary>The ETag Orleans sees for a version.</summary>
    public static string ETagOf(long version) => version.ToString(CultureInfo.InvariantCulture);
}
