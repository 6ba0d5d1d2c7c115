namespace HybridKV.Compaction;

/// <summary>
/// Records of a compacted range whose chain, traced from the index, continues on the device at a newer record (the
/// cursor): the record is dead if the record at the cursor has its key. Kept until a batch is full, then put in page
/// order of their cursors (a counting sort, in place) so that one read per page answers all of that page's checks.
/// </summary>
/// <remarks>Memory: <see cref="Capacity"/> entries of two addresses and a key, allocated as they are first needed and
/// kept for the next compaction.</remarks>
internal sealed class DeviceChecks<TKey>
    where TKey : unmanaged
{
    /// <summary>How many checks make a full batch (about 32 MiB); a batch may pass it by a page's records.</summary>
    public static readonly int Capacity = Math.Max(1 << 12, (32 << 20) / (16 + System.Runtime.CompilerServices.Unsafe.SizeOf<TKey>()));

    private Check[] _checks = new Check[1 << 12];
    private int[] _pageStarts = [];

    /// <summary>How many checks are held.</summary>
    public int Count { get; private set; }

    /// <summary>Whether the batch is full.</summary>
    public bool IsFull => Count >= Capacity;

    /// <summary>The check at <paramref name="index"/> (in page order after <see cref="SortByPage"/>).</summary>
    public ref readonly Check this[int index] => ref _checks[index];

    /// <summary>Adds the check of the record at <paramref name="address"/> against the record at
    /// <paramref name="cursor"/>.</summary>
    public void Add(long cursor, long address, in TKey key)
    {
        if (Count == _checks.Length)
        {
            // A page's records are added before the batch is answered, so it may run past the capacity by a page.
            Array.Resize(ref _checks, _checks.Length * 2);
        }

        _checks[Count++] = new Check(cursor, address, key);
    }

    /// <summary>Forgets every check.</summary>
    public void Clear() => Count = 0;

    /// <summary>
    /// Puts the checks in ascending page order of their cursors (in any order within a page): an American-flag pass
    /// over the pages the cursors span, with no second array. Optimized at once: called a few times a second, it ran
    /// as on-stack-replaced code, 5 % of compaction's samples.
    /// </summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveOptimization)]
    public void SortByPage(int pageBits)
    {
        if (Count == 0)
        {
            return;
        }

        long lowest = long.MaxValue;
        long highest = long.MinValue;
        for (int i = 0; i < Count; i++)
        {
            lowest = Math.Min(lowest, _checks[i].Cursor >> pageBits);
            highest = Math.Max(highest, _checks[i].Cursor >> pageBits);
        }

        int pages = checked((int)(highest - lowest + 1));
        if (_pageStarts.Length < pages + 1)
        {
            _pageStarts = new int[pages + 1];
        }

        Span<int> starts = _pageStarts.AsSpan(0, pages + 1);
        starts.Clear();
        for (int i = 0; i < Count; i++)
        {
            starts[(int)((_checks[i].Cursor >> pageBits) - lowest) + 1]++;
        }

        for (int p = 1; p <= pages; p++)
        {
            starts[p] += starts[p - 1];
        }

        // starts[p] is where page p's next misplaced entry goes; an entry already in its page's part stays there.
        int[] ends = new int[pages];
        for (int p = 0; p < pages; p++)
        {
            ends[p] = starts[p + 1];
        }

        for (int p = 0; p < pages; p++)
        {
            while (starts[p] < ends[p])
            {
                ref Check entry = ref _checks[starts[p]];
                int home = (int)((entry.Cursor >> pageBits) - lowest);
                if (home == p)
                {
                    starts[p]++;
                    continue;
                }

                (_checks[starts[home]], entry) = (entry, _checks[starts[home]]);
                starts[home]++;
            }
        }
    }

    /// <summary>One check: the record at <see cref="Address"/> of key <see cref="Key"/> is dead if the record at
    /// <see cref="Cursor"/> (newer, on its chain) has the same key.</summary>
    internal readonly record struct Check(long Cursor, long Address, TKey Key);
}
