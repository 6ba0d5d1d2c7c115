using System.Numerics;
using System.Runtime.CompilerServices;

namespace HybridKV.Utilities;

/// <summary>
/// CRC-32C's register carried over bytes with the processor's CRC32 instruction, a word at a time (no inversion before
/// or after): the one loop behind the records' checksums and the checkpoint parts' (<see cref="Checkpoints.Crc32C"/>).
/// </summary>
internal static class Crc32CRegister
{
    /// <summary>The register after <paramref name="length"/> bytes from <paramref name="data"/> on.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static uint Extend(uint register, ref byte data, int length)
    {
        int at = 0;
        for (; length - at >= sizeof(ulong); at += sizeof(ulong))
        {
            register = BitOperations.Crc32C(register, Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref data, at)));
        }

        if (length - at >= sizeof(uint))
        {
            register = BitOperations.Crc32C(register, Unsafe.ReadUnaligned<uint>(ref Unsafe.Add(ref data, at)));
            at += sizeof(uint);
        }

        for (; at < length; at++)
        {
            register = BitOperations.Crc32C(register, Unsafe.Add(ref data, at));
        }

        return register;
    }
}
