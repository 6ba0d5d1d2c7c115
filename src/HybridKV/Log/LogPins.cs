namespace HybridKV.Log;

/// <summary>
/// Addresses that readers outside operations (scans) still need: the begin address never moves past the lowest, so
/// compaction cannot delete what a scan is about to read. Pinning and moving the begin address happen under one lock,
/// so a scan either is seen by a compaction or sees the begin address that compaction set.
/// </summary>
internal sealed class LogPins
{
    private readonly object _lock = new();
    private readonly List<Pin> _pins = [];

    /// <summary>Pins the log's current begin address (read under the lock) for a new reader.</summary>
    public Pin PinBegin(HybridLog log)
    {
        lock (_lock)
        {
            var pin = new Pin(this, log.BeginAddress);
            _pins.Add(pin);
            return pin;
        }
    }

    /// <summary>
    /// Moves the log's begin address to <paramref name="wanted"/>, or to the lowest pinned address if that is lower;
    /// returns the address it moved to and the epoch after which no operation still reads below it.
    /// </summary>
    public (long Address, long SafeEpoch) ShiftBegin(HybridLog log, long wanted, long pageSize)
    {
        lock (_lock)
        {
            long address = wanted;
            foreach (Pin pin in _pins)
            {
                address = Math.Min(address, pin.Address & ~(pageSize - 1));
            }

            address = Math.Max(address, log.BeginAddress);
            return (address, log.ShiftBeginAddress(address));
        }
    }

    private void Remove(Pin pin)
    {
        lock (_lock)
        {
            _pins.Remove(pin);
        }
    }

    /// <summary>One reader's pin; it only moves up, and goes when disposed.</summary>
    public sealed class Pin(LogPins owner, long address) : IDisposable
    {
        private long _address = address;

        /// <summary>The lowest address the reader may still read.</summary>
        public long Address => Volatile.Read(ref _address);

        /// <summary>The reader is done below <paramref name="address"/>.</summary>
        public void MoveTo(long address)
        {
            if (address > Address)
            {
                Volatile.Write(ref _address, address);
            }
        }

        public void Dispose() => owner.Remove(this);
    }
}
