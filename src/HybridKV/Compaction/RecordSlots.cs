using System.Runtime.CompilerServices;
using HybridKV.Log;

namespace HybridKV.Compaction;

/// <summary>
/// Where records of the fixed layout lie in a page: a record that starts a multiple of the fixed size after the page's
/// first record has that multiple as its slot. Records with an expiry word are longer and shift the ones after them
/// off their slots; those have none (and the structures that index by slot skip them).
/// </summary>
internal static class RecordSlots<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    /// <summary>Slots in a page of <paramref name="pageSize"/> bytes (0 for the variable layout, which has none).</summary>
    public static int PerPage(int pageSize) =>
        LogRecord<TKey, TValue>.IsVariable ? 0 : pageSize / LogRecord<TKey, TValue>.FixedSize;

    /// <summary>The slot of a record at <paramref name="address"/>, if one of the fixed size could start there.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool TryGet(long address, long pageMask, int slots, out int slot)
    {
        long offset = (address & pageMask) - FirstOffset(address & ~pageMask);
        int fixedSize = LogRecord<TKey, TValue>.FixedSize;
        slot = (int)(offset / fixedSize);
        return offset >= 0 && offset % fixedSize == 0 && slot < slots;
    }

    /// <summary>Where the page's first record lies (the log's first page starts past address 0).</summary>
    public static long FirstOffset(long page) => page == 0 ? LogAddress.FirstValid : 0;
}
