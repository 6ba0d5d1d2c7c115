using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>Arithmetic both record layouts share.</summary>
internal static class RecordLayout
{
    /// <summary>The 8-byte word a record ends with when it has no padding to hold its checksum.</summary>
    public const int TrailerSize = sizeof(long);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int AlignTo8(int size) => (size + 7) & ~7;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static long AlignTo8(long size) => (size + 7) & ~7L;
}
