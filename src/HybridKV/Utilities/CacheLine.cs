using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics.X86;

namespace HybridKV.Utilities;

/// <summary>Asks the CPU to start loading a cache line that is about to be read, without waiting for it.</summary>
internal static unsafe class CacheLine
{
    /// <summary>
    /// Prefetches the line holding <paramref name="address"/> into every cache level. A hint only: it never faults,
    /// whatever the address, and does nothing where the platform exposes no prefetch instruction.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void Prefetch(void* address)
    {
        if (Sse.IsSupported)
        {
            Sse.Prefetch0(address);
        }
    }
}
