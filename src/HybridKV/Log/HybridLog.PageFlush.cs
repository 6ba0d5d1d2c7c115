using System.Runtime.CompilerServices;

namespace HybridKV.Log;

internal sealed partial class HybridLog
{
    // Flushes of whole sectors in flight come from here and go back when their write completed.
    private readonly Utilities.SpareObjects<PageFlush> _spareFlushes = new();

    private PageFlush RentFlush() => _spareFlushes.TryTake(out PageFlush? flush) ? flush : new PageFlush(this);

    /// <summary>
    /// The flush of one page range of whole sectors, reused: it issues the write and, when the write completes, moves
    /// the flushed prefix (<see cref="EndWrite"/>). A task per flush (an async method's state machine) was, with its
    /// epoch actions, what a page turn allocated: about 900 bytes, on the thread that turned the page.
    /// </summary>
    private sealed class PageFlush
    {
        private readonly HybridLog _log;
        private readonly Action _onWritten;
        private ConfiguredValueTaskAwaitable.ConfiguredValueTaskAwaiter _write;
        private long _from;
        private long _to;

        public PageFlush(HybridLog log)
        {
            _log = log;
            _onWritten = OnWritten;
        }

        public void Start(long page, long from, long to)
        {
            (_from, _to) = (from, to);
            try
            {
#pragma warning disable CA2012 // Consumed once, by OnWritten.
                _write = _log.BeginWrite(page, from, to).ConfigureAwait(false).GetAwaiter();
#pragma warning restore CA2012
            }
#pragma warning disable CA1031 // A flush failure is recorded and surfaces to every operation that needs the space.
            catch (Exception error)
#pragma warning restore CA1031
            {
                Finish(error);
                return;
            }

            if (_write.IsCompleted)
            {
                OnWritten();
            }
            else
            {
                _write.UnsafeOnCompleted(_onWritten);
            }
        }

        private void OnWritten()
        {
            Exception? error = null;
            try
            {
                _write.GetResult();
            }
#pragma warning disable CA1031 // As above.
            catch (Exception failure)
#pragma warning restore CA1031
            {
                error = failure;
            }

            Finish(error);
        }

        private void Finish(Exception? error)
        {
            (long from, long to) = (_from, _to);
            _write = default;
            _log._spareFlushes.TryKeep(this);

            _log.EndWrite(from, to, error);
        }
    }
}
