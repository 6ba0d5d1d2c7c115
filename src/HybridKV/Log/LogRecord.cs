using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace HybridKV.Log;

/// <summary>
/// A reference to one fixed-size record in a page frame: <c>header | key | value</c>, each part 8-byte aligned.
/// It is valid only while the epoch that found it is held.
/// </summary>
internal readonly unsafe struct LogRecord<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    private readonly byte* _start;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public LogRecord(byte* start)
    {
        Debug.Assert(start != null && ((nint)start & 7) == 0, "A record starts on an 8-byte boundary.");
        _start = start;
    }

    /// <summary>The offset of the key from the start of the record.</summary>
    public static int KeyOffset
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => sizeof(RecordHeader);
    }

    /// <summary>The offset of the value from the start of the record.</summary>
    public static int ValueOffset
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => KeyOffset + AlignTo8(sizeof(TKey));
    }

    /// <summary>The record's total size in the log.</summary>
    public static int Size
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ValueOffset + AlignTo8(sizeof(TValue));
    }

    public ref RecordHeader Header
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref Unsafe.AsRef<RecordHeader>(_start);
    }

    public ref TKey Key
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref Unsafe.AsRef<TKey>(_start + KeyOffset);
    }

    public ref TValue Value
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref Unsafe.AsRef<TValue>(_start + ValueOffset);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int AlignTo8(int size) => (size + 7) & ~7;
}
