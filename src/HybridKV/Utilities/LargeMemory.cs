using System.Runtime.InteropServices;

namespace HybridKV.Utilities;

/// <summary>
/// Native allocations for the index and the log's page frames: memory read at random addresses, where a miss in the
/// TLB costs as much as the cache miss itself. Blocks of at least one huge page are aligned to it and, on Linux,
/// advised to be backed by transparent huge pages, so that one TLB entry covers 2 MiB instead of 4 KiB.
/// </summary>
internal static unsafe partial class LargeMemory
{
    /// <summary>The huge page size of x64 and arm64 Linux with 4 KiB base pages.</summary>
    public const int HugePageBytes = 2 << 20;

    private const int MadviseHugePage = 14;

    /// <summary>Allocates <paramref name="bytes"/> aligned to <paramref name="alignment"/>, zeroed.</summary>
    public static void* AllocateZeroed(nuint bytes, nuint alignment)
    {
        bool huge = bytes >= HugePageBytes;
        void* memory = NativeMemory.AlignedAlloc(bytes, huge ? Math.Max(alignment, HugePageBytes) : alignment);
        if (huge && OperatingSystem.IsLinux())
        {
            // Advice only: where transparent huge pages are off, or the kernel has none free, base pages serve.
            _ = Madvise(memory, bytes, MadviseHugePage);
        }

        // Clearing after the advice faults the block in as huge pages where the kernel can.
        NativeMemory.Clear(memory, bytes);
        return memory;
    }

    /// <summary>Frees a block from <see cref="AllocateZeroed"/>.</summary>
    public static void Free(void* memory) => NativeMemory.AlignedFree(memory);

    [LibraryImport("libc", EntryPoint = "madvise")]
    private static partial int Madvise(void* address, nuint length, int advice);
}
