using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace HybridKV.Caching;

/// <summary>
/// The read cache (FASTER appendix D): copies of fixed-size records that reads fetched from the device, so that a hot
/// record evicted from memory is read from the device once, not on every access. Keyed by log address: a record below
/// the head never changes, so a copy is right for as long as its address is part of the log, and an update needs no
/// invalidation (it writes a newer record that the index leads to first; the old copy is simply never reached again and
/// ages out). Set-associative, <see cref="Ways"/> slots a set, each slot replaced with second chance (a slot read since
/// the hand last passed keeps its place once).
/// </summary>
/// <remarks>
/// Lock-free: a slot's state word holds its address, a version and a writing bit. A writer claims the slot by a CAS
/// that sets the bit, copies, then publishes address and a new version; a reader copies the bytes out and keeps them
/// only if the state word is unchanged afterwards (a sequence lock), so a reader never sees a torn record and never
/// writes the slot's state (hits on a hot record from many threads share its cache line read-only).
/// </remarks>
internal sealed unsafe class ReadCache : IDisposable
{
    /// <summary>Slots a set.</summary>
    public const int Ways = 8;

    private const long WritingBit = 1L << 63;
    private const int VersionShift = 48;
    private const long AddressMask = (1L << VersionShift) - 1;
    private const long VersionMask = ~WritingBit & ~AddressMask;

    // A set's state words share one cache line, so a look-up touches one line before the record it finds.
    private readonly long* _states;
    private readonly byte* _records;
    private readonly int _slotBytes;
    private readonly byte[] _referenced;
    private readonly byte[] _hands;
    // Hits and misses, in stripes a cache line apart picked by thread: one shared counter would put every hit's write
    // on one line that all threads fight over. Plain increments: two threads of one stripe may lose a count.
    private const int Stripes = 16;
    private const int StripeStride = 8;
    private readonly long[] _hits = new long[Stripes * StripeStride];
    private readonly long[] _misses = new long[Stripes * StripeStride];

    /// <param name="capacityBytes">The memory for slots (each a record of <paramref name="recordBytes"/> and a word),
    /// rounded down to whole sets.</param>
    /// <param name="recordBytes">The largest record a slot holds.</param>
    public ReadCache(long capacityBytes, int recordBytes)
    {
        RecordBytes = recordBytes;
        _slotBytes = (recordBytes + 7) & ~7;
        long perSet = Ways * (sizeof(long) + _slotBytes);
        long sets = Math.Max(1, capacityBytes / perSet);
        Sets = sets;
        _states = (long*)NativeMemory.AlignedAlloc((nuint)(sets * Ways * sizeof(long)), 64);
        NativeMemory.Clear(_states, (nuint)(sets * Ways * sizeof(long)));
        _records = (byte*)NativeMemory.AlignedAlloc((nuint)(sets * Ways * _slotBytes), 64);
        _referenced = new byte[sets * Ways];
        _hands = new byte[sets];
    }

    /// <summary>The largest record a slot holds.</summary>
    public int RecordBytes { get; }

    /// <summary>How many sets of <see cref="Ways"/> slots the cache has.</summary>
    public long Sets { get; }

    /// <summary>Records found here (counted without synchronisation: a figure, not a ledger).</summary>
    public long Hits => Sum(_hits);

    /// <summary>Records looked for here and not found (then read from the device).</summary>
    public long Misses => Sum(_misses);

    private static long Sum(long[] stripes)
    {
        long sum = 0;
        for (int i = 0; i < stripes.Length; i += StripeStride)
        {
            sum += Volatile.Read(ref stripes[i]);
        }

        return sum;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void Count(long[] stripes) =>
        stripes[(Environment.CurrentManagedThreadId & (Stripes - 1)) * StripeStride]++;

    /// <summary>
    /// Copies the record cached for <paramref name="address"/> into <paramref name="destination"/> (as much of the slot
    /// as fits: a record near the end of its page is shorter than <see cref="RecordBytes"/>); false if none is (or it
    /// was being replaced).
    /// </summary>
    public bool TryCopy(long address, Span<byte> destination)
    {
        int length = Math.Min(RecordBytes, destination.Length);
        long set = SetOf(address);
        for (int way = 0; way < Ways; way++)
        {
            long slot = (set * Ways) + way;
            ref long state = ref StateOf(slot);
            long before = Volatile.Read(ref state);
            if ((before & (AddressMask | WritingBit)) != address)
            {
                continue;
            }

            new ReadOnlySpan<byte>(BytesOf(slot), length).CopyTo(destination);
            // The copy's loads must not move after the second look at the state word.
            Interlocked.MemoryBarrier();
            if (Volatile.Read(ref state) != before)
            {
                break;
            }

            if (_referenced[slot] == 0)
            {
                _referenced[slot] = 1;
            }

            Count(_hits);
            return true;
        }

        Count(_misses);
        return false;
    }

    /// <summary>
    /// Caches <paramref name="record"/>, read from the device at <paramref name="address"/>, in its set: in a free
    /// slot, or in place of the first the hand finds not read since it last passed. Gives up (the cache is a hint) if
    /// another thread is writing the slot it chose.
    /// </summary>
    public void Add(long address, ReadOnlySpan<byte> record)
    {
        Debug.Assert(address > 0 && address <= AddressMask && record.Length <= RecordBytes, "A record of the log.");
        long set = SetOf(address);
        long first = set * Ways;
        for (int way = 0; way < Ways; way++)
        {
            if ((Volatile.Read(ref StateOf(first + way)) & AddressMask) == address)
            {
                return;
            }
        }

        long victim = -1;
        int hand = _hands[set];
        for (int step = 0; step < 2 * Ways && victim < 0; step++)
        {
            long slot = first + ((hand + step) % Ways);
            if ((Volatile.Read(ref StateOf(slot)) & AddressMask) == 0 || _referenced[slot] == 0)
            {
                victim = slot;
                _hands[set] = (byte)((hand + step + 1) % Ways);
            }
            else
            {
                _referenced[slot] = 0;
            }
        }

        ref long state = ref StateOf(victim);
        long before = Volatile.Read(ref state);
        if ((before & WritingBit) != 0 || Interlocked.CompareExchange(ref state, before | WritingBit, before) != before)
        {
            return;
        }

        byte* bytes = BytesOf(victim);
        record.CopyTo(new Span<byte>(bytes, RecordBytes));
        _referenced[victim] = 0;
        long version = (before + (1L << VersionShift)) & VersionMask;
        Volatile.Write(ref state, version | address);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long SetOf(long address) => (long)Math.BigMul((ulong)address * 0x9E3779B97F4A7C15UL, (ulong)Sets, out _);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private ref long StateOf(long slot) => ref _states[slot];

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private byte* BytesOf(long slot) => _records + (slot * _slotBytes);

    public void Dispose()
    {
        NativeMemory.AlignedFree(_states);
        NativeMemory.AlignedFree(_records);
    }
}
