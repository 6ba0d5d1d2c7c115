namespace HybridKV.Log;

/// <summary>
/// The records of one page whose addresses lie in [from, to), in address order: the one place that knows how records
/// lie in a page, for flushes (which write their checksums), recovery's replay and scans. Fixed-size records are packed
/// from the start of the page (the first page starts at <see cref="LogAddress.FirstValid"/>); variable ones are
/// stepped through by their sizes. Walks start at addresses the tail held, so at a record or at unused space; unused
/// space (a reservation never written, or the end of a page no record fitted in) is zero and is skipped.
/// </summary>
internal unsafe ref struct PageRecords<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    private readonly byte* _page;
    private readonly long _pageAddress;
    private readonly int _pageSize;
    private readonly long _to;
    private long _offset;
    private long _next;

    /// <param name="page">The page's first byte (a frame, or a buffer read from the device).</param>
    /// <param name="pageAddress">The page's log address.</param>
    /// <param name="pageSize">The page size.</param>
    /// <param name="from">The first address to visit, at a record or unused space.</param>
    /// <param name="to">The end of the walk (exclusive).</param>
    public PageRecords(byte* page, long pageAddress, int pageSize, long from, long to)
    {
        _page = page;
        _pageAddress = pageAddress;
        _pageSize = pageSize;
        _to = Math.Min(to, pageAddress + pageSize);
        long firstOffset = pageAddress == 0 ? LogAddress.FirstValid : 0;
        long offset = Math.Max(from - pageAddress, firstOffset);
        if (!LogRecord<TKey, TValue>.IsVariable)
        {
            int size = LogRecord<TKey, TValue>.FixedSize;
            offset = firstOffset + ((offset - firstOffset + size - 1) / size * size);
        }

        _offset = -1;
        _next = offset;
    }

    /// <summary>The current record.</summary>
    public readonly LogRecord<TKey, TValue> Current => new(_page + _offset);

    /// <summary>The current record's log address.</summary>
    public readonly long Address => _pageAddress + _offset;

    /// <summary>Moves to the next record that was written (whose header is not zero).</summary>
    /// <exception cref="InvalidDataException">A variable-layout record's lengths run past the end of its page: these
    /// bytes are not a record of this log.</exception>
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

            if (LogRecord<TKey, TValue>.IsVariable && !record.LengthsFitIn((int)(_pageSize - offset)))
            {
                throw new InvalidDataException(
                    $"The log holds no valid record at address {_pageAddress + offset}: its lengths describe a record " +
                    "that runs past the end of its page.");
            }

            _offset = offset;
            _next = offset + record.Size;
            return true;
        }

        return false;
    }
}
