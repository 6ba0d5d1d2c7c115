using System.Runtime.InteropServices;

namespace HybridKV.Checkpoints;

/// <summary>
/// CRC-32C (Castagnoli), computed with the processor's CRC32 instruction where it has one. Checkpoint parts carry it
/// so that a torn or corrupted part is detected before recovery trusts it.
/// </summary>
public static class Crc32C
{
    /// <summary>Extends <paramref name="crc"/> (start from 0) over <paramref name="data"/>.</summary>
    public static uint Append(uint crc, ReadOnlySpan<byte> data) =>
        ~Utilities.Crc32CRegister.Extend(~crc, ref MemoryMarshal.GetReference(data), data.Length);

    /// <summary>The CRC-32C of <paramref name="data"/>.</summary>
    public static uint Compute(ReadOnlySpan<byte> data) => Append(0, data);
}
