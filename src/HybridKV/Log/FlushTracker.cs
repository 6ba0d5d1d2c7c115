namespace HybridKV.Log;

/// <summary>
/// Turns flush completions, which arrive in any order, into one flushed-until address: the end of the longest
/// prefix of the log whose every byte was written to the device.
/// </summary>
internal sealed class FlushTracker
{
    private readonly SortedDictionary<long, long> _completedAhead = new();
    private readonly object _lock = new();
    private long _flushedUntil;

    public FlushTracker(long start) => _flushedUntil = start;

    public long FlushedUntilAddress => Volatile.Read(ref _flushedUntil);

    /// <summary>Records that <c>[start, end)</c> is durable on the device.</summary>
    /// <returns>Whether the flushed-until address moved.</returns>
    public bool Complete(long start, long end)
    {
        lock (_lock)
        {
            if (start > _flushedUntil)
            {
                _completedAhead[start] = Math.Max(end, _completedAhead.GetValueOrDefault(start));
                return false;
            }

            long until = Math.Max(_flushedUntil, end);
            while (_completedAhead.Count > 0)
            {
                KeyValuePair<long, long> next = _completedAhead.First();
                if (next.Key > until)
                {
                    break;
                }

                until = Math.Max(until, next.Value);
                _completedAhead.Remove(next.Key);
            }

            bool moved = until > _flushedUntil;
            Volatile.Write(ref _flushedUntil, until);
            return moved;
        }
    }
}
