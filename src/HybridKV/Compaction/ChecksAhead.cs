namespace HybridKV.Compaction;

/// <summary>
/// Checks (<see cref="DeviceChecks{TKey}"/>) whose cursor lies further on in the range a compaction is reading, held
/// per page of that range until the compaction reads the cursor's page anyway: answered from that page, they cost no
/// read of their own. A list per page, linked through an array, so that a page's checks are found without sorting.
/// </summary>
/// <remarks>Memory: up to <see cref="DeviceChecks{TKey}.Capacity"/> checks and a word per page of the range (its first
/// <see cref="MaxPages"/> pages), allocated as first needed and kept for the next compaction; past either, checks go to
/// the <see cref="DeviceChecks{TKey}"/>, answered by reading their pages again.</remarks>
internal sealed class ChecksAhead<TKey>
    where TKey : unmanaged
{
    private const int None = -1;

    /// <summary>The most pages of a range whose checks are held (a word each).</summary>
    public const int MaxPages = 1 << 16;

    private DeviceChecks<TKey>.Check[] _checks = new DeviceChecks<TKey>.Check[1 << 12];
    private int[] _next = new int[1 << 12];
    private int[] _firstByPage = [];
    private long _from;
    private long _until;
    private int _pageBits;
    private int _count;

    /// <summary>Forgets every check and holds checks for the pages of [<paramref name="from"/>,
    /// <paramref name="until"/>) (at most <see cref="MaxPages"/> of them) from now on.</summary>
    public void Start(long from, long until, int pageBits)
    {
        _from = from & ~((1L << pageBits) - 1);
        _until = Math.Min(until, _from + ((long)MaxPages << pageBits));
        _pageBits = pageBits;
        _count = 0;
        int pages = (int)(((_until - _from) >> pageBits) + 1);
        if (_firstByPage.Length < pages)
        {
            _firstByPage = new int[pages];
        }

        _firstByPage.AsSpan(0, pages).Fill(None);
    }

    /// <summary>
    /// Holds the check of the record at <paramref name="address"/> against the record at <paramref name="cursor"/>,
    /// if the cursor lies in the range and there is room; false otherwise (the caller answers it another way).
    /// </summary>
    public bool TryAdd(long cursor, long address, in TKey key)
    {
        if (cursor < _from || cursor >= _until || _count >= DeviceChecks<TKey>.Capacity)
        {
            return false;
        }

        if (_count == _checks.Length)
        {
            Array.Resize(ref _checks, _checks.Length * 2);
            Array.Resize(ref _next, _next.Length * 2);
        }

        ref int first = ref _firstByPage[PageIndex(cursor)];
        _checks[_count] = new DeviceChecks<TKey>.Check(cursor, address, key);
        _next[_count] = first;
        first = _count++;
        return true;
    }

    /// <summary>The first check held for the page at <paramref name="page"/> (then <see cref="Next"/>), or a negative
    /// number if none is.</summary>
    public int FirstOf(long page) => page < _until ? _firstByPage[PageIndex(page)] : None;

    /// <summary>The check held after <paramref name="index"/> for the same page, or a negative number.</summary>
    public int Next(int index) => _next[index];

    /// <summary>The check at <paramref name="index"/>.</summary>
    public ref readonly DeviceChecks<TKey>.Check this[int index] => ref _checks[index];

    /// <summary>Forgets the checks of the page at <paramref name="page"/> (answered).</summary>
    public void Answered(long page)
    {
        if (page < _until)
        {
            _firstByPage[PageIndex(page)] = None;
        }
    }

    private int PageIndex(long address)
    {
        System.Diagnostics.Debug.Assert(address >= _from && address < _until, "An address of the range.");
        return (int)((address - _from) >> _pageBits);
    }
}
