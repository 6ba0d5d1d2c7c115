using System.Buffers.Binary;
using System.Numerics;

namespace HybridKV.Checkpoints;

/// <summary>
/// CRC-32C (Castagnoli), computed with the processor's CRC32 instruction where it has one. Checkpoint parts carry it
/// so that a torn or corrupted part is detected before recovery trusts it.
/// </summary>
public static class Crc32C
{
    /// <summary>Extends <paramref name="crc"/> (start from 0) over <paramref name="data"/>.</summary>
    public static uint Append(uint crc, ReadOnlySpan<byte> data)
    {
        uint state = ~crc;
        while (data.Length >= sizeof(ulong))
        {
            state = BitOperations.Crc32C(state, BinaryPrimitives.ReadUInt64LittleEndian(data));
            data = data[sizeof(ulong)..];
        }

        foreach (byte b in data)
        {
            state = BitOperations.Crc32C(state, b);
        }

        return ~state;
    }

    /// <summary>The CRC-32C of <paramref name="data"/>.</summary>
    public static uint Compute(ReadOnlySpan<byte> data) => Append(0, data);
}
