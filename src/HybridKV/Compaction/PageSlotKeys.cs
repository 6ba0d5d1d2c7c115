using System.Runtime.CompilerServices;

namespace HybridKV.Compaction;

/// <summary>
/// Keys kept for one log page's record slots (<see cref="RecordSlots{TKey, TValue}"/>), each beside its flag in the same
/// cache line (a group of slots a line: for 8-byte keys, seven keys then their seven flags), so that setting or looking
/// up a key costs one line, not one for the key and another for the flag (with two, the notes scattered into slots
/// waited for twice the misses). Used by <see cref="SupersededKeys{TKey, TValue}"/> (one page's notes laid out) and by
/// <see cref="DevicePageKeys{TKey, TValue}"/>, each on compaction's side alone.
/// </summary>
internal sealed unsafe class PageSlotKeys<TKey>
    where TKey : unmanaged
{
    /// <summary>The page of an entry that holds none.</summary>
    public const long NoPage = -1;

    private const int Line = 64;

    // Slots a group, and a group's bytes: a line, or for keys of a line or more, as many lines as one slot needs.
    private static readonly int s_perGroup = Math.Max(1, Line / (Unsafe.SizeOf<TKey>() + 1));
    private static readonly int s_groupBytes = s_perGroup > 1 ? Line : (Unsafe.SizeOf<TKey>() + 1 + Line - 1) / Line * Line;

    // Pinned (it never moves) and a line over, so that groups start on lines.
    private readonly byte[] _memory;
    private readonly byte* _groups;
    private readonly int _bytes;

    /// <param name="slots">The record slots of a page.</param>
    public PageSlotKeys(int slots)
    {
        _bytes = (int)BytesFor(slots);
        _memory = GC.AllocateUninitializedArray<byte>(_bytes + Line, pinned: true);
        byte* start = (byte*)Unsafe.AsPointer(ref _memory[0]);
        _groups = start + ((Line - ((nint)start & (Line - 1))) & (Line - 1));
    }

    /// <summary>The page whose keys these are, or <see cref="NoPage"/>.</summary>
    public long Page { get; private set; } = NoPage;

    /// <summary>The bytes of the groups of <paramref name="slots"/> slots (the object takes a line more, to align them).</summary>
    public static long BytesFor(int slots) => (long)(slots + s_perGroup - 1) / s_perGroup * s_groupBytes;

    /// <summary>Forgets every key and holds those of <paramref name="page"/> from now on.</summary>
    public void Assign(long page)
    {
        new Span<byte>(_groups, _bytes).Clear();
        Page = page;
    }

    /// <summary>Holds no page's keys any more (they are forgotten when it is next assigned one).</summary>
    public void Forget() => Page = NoPage;

    /// <summary>Keeps <paramref name="key"/> for slot <paramref name="slot"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Set(int slot, in TKey key)
    {
        byte* group = Group(slot, out int index);
        Unsafe.WriteUnaligned(group + (index * Unsafe.SizeOf<TKey>()), key);
        group[(s_perGroup * Unsafe.SizeOf<TKey>()) + index] = 1;
    }

    /// <summary>Starts loading the line of slot <paramref name="slot"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Prefetch(int slot) => Utilities.CacheLine.Prefetch(Group(slot, out _));

    /// <summary>The key kept for slot <paramref name="slot"/>, if one was.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryGet(int slot, out TKey key)
    {
        byte* group = Group(slot, out int index);
        key = Unsafe.ReadUnaligned<TKey>(group + (index * Unsafe.SizeOf<TKey>()));
        return group[(s_perGroup * Unsafe.SizeOf<TKey>()) + index] != 0;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private byte* Group(int slot, out int index)
    {
        System.Diagnostics.Debug.Assert(slot >= 0 && (long)(slot / s_perGroup) * s_groupBytes < _bytes, "A slot of the page.");
        int group = slot / s_perGroup;
        index = slot - (group * s_perGroup);
        return _groups + ((nint)group * s_groupBytes);
    }
}
