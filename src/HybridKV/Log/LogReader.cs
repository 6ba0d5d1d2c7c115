using HybridKV.Devices;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Log;

/// <summary>
/// Reads the log from outside an operation, for scans and compaction: a page range at a time and single records (a
/// hash chain followed onto the device), from memory or the device, into three buffers of a page each, so that what it
/// holds is bounded whatever the log's size. Records read from the device are checked against their checksums by the
/// caller (<see cref="ThrowIfDamaged"/>): a damaged record is an error, never a record.
/// </summary>
internal sealed class LogReader<TKey, TValue> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
{
    private readonly HybridLog _log;
    private readonly LightEpoch _epoch;
    private readonly int _epochEntry;
    private readonly Func<bool>? _storeDisposed;
    private readonly TimeProvider _clock;
    private readonly ContinuationThread? _resumeOn;
    private long _pageReadAt;
    private AlignedBuffer _page;
    private AlignedBuffer _ahead;
    private readonly AlignedBuffer _record;
    private AlignedBuffer? _slots;
    private readonly int[] _slotOffsets = new int[RecordSlots];
    private readonly ValueTask[] _slotReads = new ValueTask[RecordSlots];
    private Task? _aheadRead;
    private long _aheadPage = LogAddress.Invalid;
    private long _aheadTo;
    private long _pageAddress = LogAddress.Invalid;
    private bool _pageFromDevice;
    private long _readFrom;
    private int _recordOffset;

    /// <param name="log">The log.</param>
    /// <param name="epoch">The log's epoch framework.</param>
    /// <param name="epochEntry">An epoch row this reader may protect while it copies from a page frame.</param>
    /// <param name="clock">The store's clock, which tells expired values (as of when a page is read).</param>
    /// <param name="storeDisposed">Whether the store was disposed (checked after protecting, as sessions do, so that
    /// a reader never touches memory the store freed); null for readers the store stops before it is disposed.</param>
    /// <param name="resumeOn">Where the reader's callers go on after a device read (their own thread, see
    /// <see cref="ContinuationThread"/>), or null for where the read completes.</param>
    public LogReader(HybridLog log, LightEpoch epoch, int epochEntry, TimeProvider clock, Func<bool>? storeDisposed = null,
        ContinuationThread? resumeOn = null)
    {
        _clock = clock;
        _resumeOn = resumeOn;
        _log = log;
        _epoch = epoch;
        _epochEntry = epochEntry;
        _storeDisposed = storeDisposed;
        int alignment = Math.Max(log.Device?.SectorSize ?? 512, 512);
        _page = new AlignedBuffer(log.PageSize, alignment);
        _ahead = new AlignedBuffer(log.PageSize, alignment);
        _record = new AlignedBuffer(log.PageSize, alignment);
    }

    /// <summary>
    /// Reads the records of [<paramref name="from"/>, <paramref name="to"/>) of one page, a copy from its frame while
    /// it is in memory, otherwise from the device. Walk them with <see cref="NextRecord"/>, starting at
    /// <paramref name="from"/>, which may be any address: the page is read from its start, and the first walk steps
    /// from there over the records below it.
    /// </summary>
    /// <returns>Whether the page came from the device (its records then carry checksums, and it must start with a
    /// record: see <see cref="ThrowIfPageMissing"/>).</returns>
    public async ValueTask<bool> ReadPageAsync(long from, long to, CancellationToken cancellationToken)
    {
        long pageAddress = from & ~(_log.PageSize - 1L);
        if (_aheadRead is { } ahead)
        {
            bool wanted = _aheadPage == pageAddress && _aheadTo >= to;
            try
            {
                // Awaited even when unwanted: the device may still be writing into the buffer.
                await ahead.ConfigureAwait(false);
            }
            catch (Exception) when (!wanted)
            {
                // A read nobody wants: its failure is not this read's (which goes to the device again below).
            }
            finally
            {
                _aheadRead = null;
                _aheadPage = LogAddress.Invalid;
            }

            if (wanted)
            {
                (_page, _ahead) = (_ahead, _page);
                StartPage(pageAddress, from, fromDevice: true);
                ThrowIfPageMissing();
                return true;
            }
        }

        StartPage(pageAddress, from, fromDevice: false);
        if (TryCopyFromMemory(pageAddress, to))
        {
            return false;
        }

        _pageFromDevice = true;
        StorageDevice device = _log.Device ?? throw new InvalidOperationException("The log has no device to read from.");
        await ReadInPartsAsync(device, pageAddress, _page.Memory[..DeviceReadLength(device, pageAddress, to)],
            cancellationToken).ConfigureAwait(false);
        ThrowIfPageMissing();
        return true;
    }

    /// <summary>
    /// Starts reading [<paramref name="from"/>, <paramref name="to"/>) of a page below the head from the device into a
    /// spare buffer, so that the <see cref="ReadPageAsync"/> that asks for it next finds it read (or reading) while the
    /// caller worked on the page before: a compaction's time is then its work or its reads, not both. A page still in
    /// memory is not read ahead (it is copied when asked for). At most one read ahead at a time; a later call while
    /// one runs is ignored.
    /// </summary>
    public void ReadAhead(long from, long to, CancellationToken cancellationToken)
    {
        long pageAddress = from & ~(_log.PageSize - 1L);
        if (_aheadRead is not null || _log.Device is not { } device || pageAddress + _log.PageSize > _log.HeadAddress)
        {
            return;
        }

        _aheadPage = pageAddress;
        _aheadTo = to;
        _aheadRead = ReadInPartsAsync(device, pageAddress, _ahead.Memory[..DeviceReadLength(device, pageAddress, to)],
            cancellationToken);
    }

    /// <summary>
    /// Reads <paramref name="destination"/> from <paramref name="address"/>, a large read as two requests at once: a
    /// device given one request at a time sat idle between them, and a page read alone ran at three quarters of what
    /// the device gives two.
    /// </summary>
    private async Task ReadInPartsAsync(StorageDevice device, long address, Memory<byte> destination,
        CancellationToken cancellationToken)
    {
        int part = (destination.Length / 2 + device.SectorSize - 1) & -device.SectorSize;
        if (destination.Length < MinPartBytes * 2 || part >= destination.Length)
        {
            await Completed(ReadFromDevice(device, address, destination, cancellationToken));
            return;
        }

        ValueTask first = ReadFromDevice(device, address, destination[..part], cancellationToken);
        ValueTask second = default;
        try
        {
            second = ReadFromDevice(device, address + part, destination[part..], cancellationToken);
        }
        finally
        {
            // Both awaited whatever failed: the device may still be writing into the buffer.
            try
            {
                await Completed(first);
            }
            finally
            {
                await Completed(second);
            }
        }
    }

    /// <summary>A read of the device, completed where it is learned of when its caller goes on on its own thread (the
    /// continuation then only posts the caller there).</summary>
    private ValueTask ReadFromDevice(StorageDevice device, long address, Memory<byte> destination,
        CancellationToken cancellationToken) =>
        device.ReadAsync(address, destination, completeInline: _resumeOn is not null, cancellationToken);

    /// <summary>Awaits a read from <see cref="ReadFromDevice"/>, going on on the reader's thread if it has one.</summary>
    private ContinuationThread.ResumeAwaitable Completed(ValueTask read) => ContinuationThread.ResumeOn(_resumeOn, read);

    /// <summary>The smallest request a split makes.</summary>
    private const int MinPartBytes = 128 << 10;

    private void StartPage(long pageAddress, long from, bool fromDevice)
    {
        _pageAddress = pageAddress;
        _readFrom = from;
        _pageReadAt = _clock.GetUtcNow().ToUnixTimeMilliseconds();
        _pageFromDevice = fromDevice;
    }

    /// <summary>Bytes to read from the page's start to cover <paramref name="to"/>, in whole sectors.</summary>
    private int DeviceReadLength(StorageDevice device, long pageAddress, long to)
    {
        long sectorMask = device.SectorSize - 1;
        return (int)(Math.Min((to + sectorMask) & ~sectorMask, pageAddress + _log.PageSize) - pageAddress);
    }

    /// <summary>
    /// Every page the tail opened starts with a record (the reservation that crossed into it), so a page read from the
    /// device whose first record is zeros lost its bytes: a deleted or truncated segment file. Taking it for unused
    /// space would skip its records without a word.
    /// </summary>
    private void ThrowIfPageMissing()
    {
        long firstSlot = Math.Max(_pageAddress, LogAddress.FirstValid);
        if (PageRecordAt(firstSlot).Header.IsNull)
        {
            string location = _log.Device?.DescribeAddress(firstSlot) ?? $"address {firstSlot}";
            throw new CorruptLogException(firstSlot, location,
                "no record where a page of the log starts (its segment file is missing or shorter than it was written)");
        }
    }

    /// <summary>Protects the reader's epoch row; throws if the store was disposed (then nothing may be read).</summary>
    public void Protect()
    {
        _epoch.Protect(_epochEntry);
        if (_storeDisposed?.Invoke() == true)
        {
            _epoch.Unprotect(_epochEntry);
            throw new ObjectDisposedException("HybridKVStore", "The store was disposed while a scan of its log ran.");
        }
    }

    /// <summary>Ends <see cref="Protect"/>.</summary>
    public void Unprotect() => _epoch.Unprotect(_epochEntry);

    private unsafe bool TryCopyFromMemory(long pageAddress, long to)
    {
        // Below the head a page stays on the device (the head only rises): that takes no protection to know, and a
        // compaction's checks read such pages while its copies hold the reader's epoch row.
        if (pageAddress + _log.PageSize <= _log.HeadAddress)
        {
            return false;
        }

        Protect();
        try
        {
            if (pageAddress + _log.PageSize <= _log.HeadAddress)
            {
                return false;
            }

            int length = (int)Math.Min(to - pageAddress, _log.PageSize);
            Buffer.MemoryCopy(_log.PageFrame(pageAddress), _page.Pointer, length, length);
            return true;
        }
        finally
        {
            Unprotect();
        }
    }

    /// <summary>The records of the page last read, in [<paramref name="from"/>, <paramref name="to"/>).</summary>
    public unsafe PageRecords<TKey, TValue> Records(long from, long to) =>
        new(_page.Pointer, _pageAddress, _log.PageSize, from, to, fromIsRecordStart: from != _readFrom);

    /// <summary>
    /// The next written, valid record of the page last read, at or after <paramref name="next"/> and before
    /// <paramref name="end"/> (which it moves past); one read from the device is checked against its checksum first.
    /// <paramref name="noValue"/> says it holds no value: a delete marker, or a value that had expired when the page
    /// was read.
    /// </summary>
    public bool NextRecord(ref long next, long end, out long address, out bool noValue)
    {
        var none = default(SkipsNone);
        return NextRecord(ref next, end, out address, out noValue, ref none);
    }

    /// <summary>
    /// <see cref="NextRecord(ref long, long, out long, out bool)"/>, passing over the valid records with a value that
    /// <paramref name="skip"/> takes (compaction's, dropped by their keys alone). Checked first like every other: a
    /// damaged header could give the walk a wrong size and so misplace every record after it on the page.
    /// </summary>
    public bool NextRecord<TSkip>(ref long next, long end, out long address, out bool noValue, ref TSkip skip)
        where TSkip : struct, ISkipsRecords<TKey, TValue>
    {
        PageRecords<TKey, TValue> walk = Records(next, end);
        while (walk.MoveNext())
        {
            LogRecord<TKey, TValue> record = walk.Current;
            next = walk.Address + record.Size;
            if (_pageFromDevice)
            {
                ThrowIfDamaged(record, walk.Address, (int)(_log.PageSize - (walk.Address & (_log.PageSize - 1L))));
            }

            if (!record.Header.Invalid && !record.Header.Tombstone && skip.Skips(walk.Address, record))
            {
                continue;
            }

            if (!record.Header.Invalid)
            {
                address = walk.Address;
                noValue = record.Header.Tombstone || record.HasExpiredAt(_pageReadAt);
                return true;
            }
        }

        address = LogAddress.Invalid;
        noValue = false;
        return false;
    }

    private struct SkipsNone : ISkipsRecords<TKey, TValue>
    {
        public readonly bool Skips(long address, LogRecord<TKey, TValue> record) => false;
    }

    /// <summary>The key of the record at <paramref name="address"/> of the page last read: a <see cref="VarBytes"/>
    /// key points into the page buffer, which stays put until the next page is read.</summary>
    public TKey KeyAt(long address)
    {
        VarBytes scratch = default;
        return PageRecordAt(address).KeyRef(ref scratch);
    }

    /// <summary>The record at <paramref name="address"/> of the page last read (an address a walk of it returned).</summary>
    public unsafe LogRecord<TKey, TValue> PageRecordAt(long address)
    {
        System.Diagnostics.Debug.Assert(address >= _pageAddress && address < _pageAddress + _log.PageSize, "In the page read.");
        return new(_page.Pointer + (address - _pageAddress));
    }

    /// <summary>Prefetches the first cache line of the record at <paramref name="address"/> of the page last read.</summary>
    public unsafe void PrefetchPageRecord(long address) =>
        Utilities.CacheLine.Prefetch(_page.Pointer + (address - _pageAddress));

    /// <summary>The <paramref name="size"/> bytes at <paramref name="address"/> of the page last read (a record a walk
    /// of it returned), valid until the next page is read.</summary>
    public unsafe ReadOnlySpan<byte> PageBytesAt(long address, int size)
    {
        System.Diagnostics.Debug.Assert(address >= _pageAddress && address + size <= _pageAddress + _log.PageSize, "In the page read.");
        return new(_page.Pointer + (address - _pageAddress), size);
    }

    /// <summary>Reads the record at <paramref name="address"/> from the device; <see cref="Record"/> is it.</summary>
    public async ValueTask ReadRecordAsync(long address, CancellationToken cancellationToken)
    {
        StorageDevice device = _log.Device ?? throw new InvalidOperationException("The log has no device to read from.");
        long pageEnd = (address | (_log.PageSize - 1L)) + 1;
        int size = LogRecord<TKey, TValue>.IsVariable ? 1024 : LogRecord<TKey, TValue>.MaxFixedSize;
        while (true)
        {
            (long start, long end) = Sectors(device, address, size);
            _recordOffset = (int)(address - start);
            await Completed(ReadFromDevice(device, start, _record.Memory[..(int)(end - start)], cancellationToken));
            int available = (int)(end - address);
            if (!LogRecord<TKey, TValue>.IsVariable || RecordFits(available) || end == pageEnd)
            {
                return;
            }

            size = RecordSize;
        }
    }

    /// <summary>How many records <see cref="ReadRecordsAsync"/> reads at once.</summary>
    public const int RecordSlots = 64;

    /// <summary>
    /// Reads the fixed-size records at <paramref name="addresses"/> (at most <see cref="RecordSlots"/>) from the device,
    /// all at once: records far apart wait for the device together, not one after another. <see cref="SlotRecord"/> is
    /// each, in the order of <paramref name="addresses"/>.
    /// </summary>
    public async Task ReadRecordsAsync(List<long> addresses, CancellationToken cancellationToken)
    {
        System.Diagnostics.Debug.Assert(!LogRecord<TKey, TValue>.IsVariable && addresses.Count <= RecordSlots,
            "A slot per record.");
        StorageDevice device = _log.Device ?? throw new InvalidOperationException("The log has no device to read from.");
        int slotBytes = SlotBytes(device);
        _slots ??= new AlignedBuffer(RecordSlots * slotBytes, Math.Max(device.SectorSize, 512));
        int issued = 0;
        try
        {
            for (; issued < addresses.Count; issued++)
            {
                long address = addresses[issued];
                (long start, long end) = Sectors(device, address, LogRecord<TKey, TValue>.MaxFixedSize);
                _slotOffsets[issued] = (int)(address - start);
#pragma warning disable CA2012 // Each is awaited once, below, after all were issued.
                _slotReads[issued] = ReadFromDevice(device, start,
                    _slots.Memory.Slice(issued * slotBytes, (int)(end - start)), cancellationToken);
#pragma warning restore CA2012
            }
        }
        finally
        {
            // Every read issued is awaited, whatever failed: the device may still be writing into the slots.
            Exception? failure = null;
            for (int i = 0; i < issued; i++)
            {
                try
                {
                    await Completed(_slotReads[i]);
                }
#pragma warning disable CA1031 // The first failure is thrown once every read has ended.
                catch (Exception error)
#pragma warning restore CA1031
                {
                    failure ??= error;
                }
                finally
                {
                    _slotReads[i] = default;
                }
            }

            if (failure is not null)
            {
                System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failure);
            }
        }
    }

    /// <summary>The whole sectors holding <paramref name="size"/> bytes from <paramref name="address"/>, no further
    /// than the end of its page (a record never crosses it).</summary>
    private (long Start, long End) Sectors(StorageDevice device, long address, int size)
    {
        long sectorMask = device.SectorSize - 1;
        long pageEnd = (address | (_log.PageSize - 1L)) + 1;
        return (address & ~sectorMask, Math.Min((address + size + sectorMask) & ~sectorMask, pageEnd));
    }

    /// <summary>The <paramref name="index"/>th record <see cref="ReadRecordsAsync"/> read.</summary>
    public unsafe LogRecord<TKey, TValue> SlotRecord(int index) =>
        new(_slots!.Pointer + (index * SlotBytes(_log.Device!)) + _slotOffsets[index]);

    /// <summary>Room for a fixed-size record that may cross a sector boundary.</summary>
    private static int SlotBytes(StorageDevice device) =>
        2 * Math.Max(device.SectorSize, LogRecord<TKey, TValue>.MaxFixedSize);

    private bool RecordFits(int available) => Record.Header.IsNull || Record.LengthsFitIn(available);

    private int RecordSize => Record.Size;

    /// <summary>The bytes of the fixed-size record <see cref="ReadRecordAsync"/> read.</summary>
    public unsafe ReadOnlySpan<byte> RecordBytes => new(_record.Pointer + _recordOffset, Record.Size);

    /// <summary>The record <see cref="ReadRecordAsync"/> read.</summary>
    public unsafe LogRecord<TKey, TValue> Record => new(_record.Pointer + _recordOffset);

    /// <summary>
    /// Throws <see cref="CorruptLogException"/> naming the address and where the device keeps it if
    /// <paramref name="record"/>, read from the device at <paramref name="address"/>, is missing or damaged.
    /// </summary>
    public void ThrowIfDamaged(LogRecord<TKey, TValue> record, long address, int available)
    {
        if (record.Header.IsNull || !record.LengthsFitIn(available) || !record.ChecksumMatches)
        {
            string location = _log.Device?.DescribeAddress(address) ?? $"address {address}";
            throw new CorruptLogException(address, location, record.Header.IsNull
                ? "no record is there (its segment file is missing or shorter than it was written)"
                : "the record's checksum does not match");
        }
    }

    public void Dispose()
    {
        // A read ahead nobody asked for may still be writing into its buffer.
        _aheadRead?.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
        ((IDisposable)_ahead).Dispose();
        ((IDisposable)_page).Dispose();
        ((IDisposable)_record).Dispose();
        ((IDisposable?)_slots)?.Dispose();
    }
}
