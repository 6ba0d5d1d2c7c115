using System.Runtime.InteropServices;
using HybridKV.Log;

namespace HybridKV.Compaction;

/// <summary>
/// Copies of the fixed-size records a compaction found live, kept from the moment they were found so that copying
/// them forward reads no page again: the copy phase is short, and writers the compaction holds back are let go only
/// for it. At most <see cref="Capacity"/> records (about 32 MiB); the rest are re-read from the log.
/// </summary>
internal sealed unsafe class CandidateRecords<TKey, TValue> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
{
    // A slot holds the largest fixed-size record: an expiring one, a word longer than the rest.
    private static readonly int SlotSize = LogRecord<TKey, TValue>.MaxFixedSize;

    /// <summary>How many records it holds at most.</summary>
    public static readonly int Capacity = Math.Max(1024, (32 << 20) / SlotSize);

    private byte* _bytes;
    private long[] _addresses = new long[1024];
    private int _allocated;

    /// <summary>How many records it holds.</summary>
    public int Count { get; private set; }

    /// <summary>Whether it holds <see cref="Capacity"/> records.</summary>
    public bool IsFull => Count >= Capacity;

    /// <summary>Keeps a copy of <paramref name="record"/>'s bytes, found at <paramref name="address"/> (not when
    /// full).</summary>
    public void Add(long address, ReadOnlySpan<byte> record)
    {
        if (Count == _allocated)
        {
            int grown = Math.Min(Capacity, Math.Max(1024, _allocated * 2));
            _bytes = (byte*)NativeMemory.Realloc(_bytes, (nuint)((long)grown * SlotSize));
            Array.Resize(ref _addresses, grown);
            _allocated = grown;
        }

        System.Diagnostics.Debug.Assert(record.Length <= SlotSize, "A fixed-layout record.");
        record.CopyTo(new Span<byte>(_bytes + ((long)Count * SlotSize), SlotSize));
        _addresses[Count++] = address;
    }

    /// <summary>The address the record at <paramref name="index"/> was found at.</summary>
    public long AddressAt(int index) => _addresses[index];

    /// <summary>The copy of the record at <paramref name="index"/>.</summary>
    public LogRecord<TKey, TValue> RecordAt(int index) => new(_bytes + ((long)index * SlotSize));

    /// <summary>The key of the record at <paramref name="index"/>.</summary>
    public TKey KeyAt(int index)
    {
        VarBytes scratch = default;
        return RecordAt(index).KeyRef(ref scratch);
    }

    /// <summary>Forgets every record (keeps the memory for the next compaction).</summary>
    public void Clear() => Count = 0;

    public void Dispose()
    {
        NativeMemory.Free(_bytes);
        _bytes = null;
        _allocated = 0;
        Count = 0;
    }
}
