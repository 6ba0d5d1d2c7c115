namespace HybridKV.Log;

/// <summary>
/// The records of one page whose addresses lie in [from, to), in address order: the one place that knows how records
/// lie in a page, for flushes (which write their checksums), recovery's replay and scans. Records are stepped through
/// by their sizes from the start of the page (the first page starts at <see cref="LogAddress.FirstValid"/>): fixed-size
/// records too, since an expiring one is a word longer. A walk from an address the tail held starts there; one from
/// any other address (a begin address or scan start a user chose) steps from the page's start over the records below
/// it. Unused space (a reservation never written, or the end of a page no record fitted in) is zero and is skipped.
/// </summary>
internal unsafe ref struct PageRecords<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    private readonly byte* _page;
    private readonly long _pageAddress;
    private readonly int _pageSize;
    private readonly long _to;
    private readonly long _from;
    private long _offset;
    private long _next;

    /// <param name="page">The page's first byte (a frame, or a buffer read from the device).</param>
    /// <param name="pageAddress">The page's log address.</param>
    /// <param name="pageSize">The page size.</param>
    /// <param name="from">The first address to visit.</param>
    /// <param name="to">The end of the walk (exclusive).</param>
    /// <param name="fromIsRecordStart">Whether <paramref name="from"/> is an address the tail held (a record's start or
    /// unused space); otherwise the walk steps from the page's start, whose bytes <paramref name="page"/> must hold.</param>
    public PageRecords(byte* page, long pageAddress, int pageSize, long from, long to, bool fromIsRecordStart)
    {
        _page = page;
        _pageAddress = pageAddress;
        _pageSize = pageSize;
        _to = Math.Min(to, pageAddress + pageSize);
        _from = from;
        long firstOffset = pageAddress == 0 ? LogAddress.FirstValid : 0;
        _offset = -1;
        _next = fromIsRecordStart ? Math.Max(from - pageAddress, firstOffset) : firstOffset;
    }

    /// <summary>How far ahead of the record walked its page's lines are prefetched.</summary>
    private const int ReadAhead = 1024;

    /// <summary>The current record.</summary>
    public readonly LogRecord<TKey, TValue> Current => new(_page + _offset);

    /// <summary>The current record's log address.</summary>
    public readonly long Address => _pageAddress + _offset;

    /// <summary>Moves to the next record that was written (whose header is not zero).</summary>
    /// <exception cref="InvalidDataException">A record's header and lengths run past the end of its page: these bytes
    /// are not a record of this log.</exception>
    public bool MoveNext()
    {
        int minimum = LogRecord<TKey, TValue>.IsVariable ? sizeof(long) : LogRecord<TKey, TValue>.FixedSize;
        while (_next + minimum <= _pageSize && _pageAddress + _next < _to)
        {
            long offset = _next;
            var record = new LogRecord<TKey, TValue>(_page + offset);
            if (record.Header.IsNull)
            {
                // Unused space: a fixed-size slot never written, or a zero word of the variable layout.
                _next = offset + (LogRecord<TKey, TValue>.IsVariable ? sizeof(long) : LogRecord<TKey, TValue>.FixedSize);
                continue;
            }

            if (!record.LengthsFitIn((int)(_pageSize - offset)))
            {
                throw new InvalidDataException(
                    $"The log holds no valid record at address {_pageAddress + offset}: its header and lengths " +
                    "describe a record that runs past the end of its page.");
            }

            _next = offset + record.Size;
            if (_next + ReadAhead < _pageSize)
            {
                // A page read from the device lies in memory the cache has not seen: its lines are asked for early,
                // whatever the walk does with each record meanwhile (a checksum, a look-up).
                Utilities.CacheLine.Prefetch(_page + _next + ReadAhead);
            }

            if (_pageAddress + offset < _from)
            {
                continue;
            }

            _offset = offset;
            return true;
        }

        return false;
    }
}
