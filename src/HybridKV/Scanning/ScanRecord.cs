using System.Runtime.InteropServices;

namespace HybridKV;

/// <summary>One record a scan of the log found.</summary>
/// <remarks>
/// A <see cref="VarBytes"/> key or value points into the scan's buffer: it is valid until the scan moves to the next
/// record. Copy what must outlive that (<see cref="VarBytes.AsReadOnlySpan"/>).
/// </remarks>
/// <typeparam name="TKey">The store's key type.</typeparam>
/// <typeparam name="TValue">The store's value type.</typeparam>
[StructLayout(LayoutKind.Auto)]
public readonly struct ScanRecord<TKey, TValue>
    where TKey : unmanaged
    where TValue : unmanaged
{
    internal ScanRecord(long address, TKey key, TValue value, bool isDeleted, DateTimeOffset? expiresAt)
    {
        Address = address;
        Key = key;
        Value = value;
        IsDeleted = isDeleted;
        ExpiresAt = expiresAt;
    }

    /// <summary>The record's log address: later records of a key have higher addresses.</summary>
    public long Address { get; }

    /// <summary>The record's key.</summary>
    public TKey Key { get; }

    /// <summary>The record's value (meaningless for a delete marker).</summary>
    public TValue Value { get; }

    /// <summary>Whether the record marks its key deleted (a tombstone). Live scans never return one.</summary>
    public bool IsDeleted { get; }

    /// <summary>
    /// When the value expires (to the millisecond), or <see langword="null"/> if it was written without an
    /// <see cref="Expiration"/>. Live scans never return a value that had expired when its page was read.
    /// </summary>
    public DateTimeOffset? ExpiresAt { get; }
}
