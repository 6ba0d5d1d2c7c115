namespace HybridKV.Compaction;

/// <summary>
/// The live bytes of the last pages that reached the head, one memory's worth of them: in a steady state every live
/// record passes the head once per trip of the log through memory, so their sum is the live data memory holds. While the
/// first trip is under way the sum is lower than that, so the window errs toward keeping records in memory.
/// </summary>
internal sealed class LiveBytesWindow(int pages)
{
    private readonly long[] _live = new long[pages];
    private int _count;
    private int _next;
    private long _sum;

    /// <summary>The live bytes of the pages in the window except the one the next page will push out.</summary>
    public long SumBeforeNext => _count < _live.Length ? _sum : _sum - _live[_next];

    /// <summary>Records the live bytes of the page that just reached the head.</summary>
    public void Add(long liveBytes)
    {
        if (_count < _live.Length)
        {
            _count++;
        }
        else
        {
            _sum -= _live[_next];
        }

        _live[_next] = liveBytes;
        _sum += liveBytes;
        _next = (_next + 1) % _live.Length;
    }
}
