using System.Globalization;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using HybridKV.Log;

namespace HybridKV.Checkpoints;

/// <summary>
/// What the bytes of a store's log and checkpoints mean: written to the log device's label when a log starts and into
/// every checkpoint, and compared whenever a store opens a device or recovers a checkpoint, so that a store of other
/// types, another geometry, another hash function or another format refuses, and a checkpoint of another log is never
/// recovered.
/// </summary>
/// <param name="Format">The on-disk format of the log, its label and checkpoints.</param>
/// <param name="LogId">The log this is: chosen when the log starts, kept across recoveries.</param>
/// <param name="KeyType">The key type's full name.</param>
/// <param name="ValueType">The value type's full name.</param>
/// <param name="KeySize">The key's size in bytes, or -1 for variable length.</param>
/// <param name="ValueSize">The value's size in bytes, or -1 for variable length.</param>
/// <param name="RecordSize">The fixed record size, or -1 for the variable layout.</param>
/// <param name="PageSizeBits">log2 of the log's page size.</param>
/// <param name="SegmentSizeBits">log2 of the device's segment size.</param>
/// <param name="KeyHash">The hashes of a few fixed probe keys: differs when the hash function does.</param>
internal sealed record StoreIdentity(
    int Format,
    Guid LogId,
    string KeyType,
    string ValueType,
    int KeySize,
    int ValueSize,
    int RecordSize,
    int PageSizeBits,
    int SegmentSizeBits,
    string KeyHash)
{
    /// <summary>Format 2: the first with a device label and this identity in checkpoints. Format 3: record headers
    /// carry the expiring bit, and versions in 12 bits. Format 4: record checksums are CRC-32C.</summary>
    public const int CurrentFormat = 4;

    /// <summary>Said of the hash fingerprint when the hash function threw on a probe key.</summary>
    public const string UnknownKeyHash = "unknown";

    /// <summary>A store's identity before its log is known (<see cref="LogId"/> empty).</summary>
    public static StoreIdentity For<TKey, TValue>(int pageSizeBits, long segmentSize, KeyHasher<TKey> hash)
        where TKey : unmanaged
        where TValue : unmanaged =>
        new(CurrentFormat, Guid.Empty, NameOf(typeof(TKey)), NameOf(typeof(TValue)),
            LogRecord<TKey, TValue>.LayoutKeySize, LogRecord<TKey, TValue>.LayoutValueSize,
            LogRecord<TKey, TValue>.LayoutRecordSize, pageSizeBits, System.Numerics.BitOperations.Log2((ulong)segmentSize),
            Fingerprint(hash));

    /// <summary>
    /// Every difference from <paramref name="other"/> that would make one misread the other's bytes (the log id
    /// aside), each as "what: this vs that".
    /// </summary>
    public IReadOnlyList<string> DifferencesFrom(StoreIdentity other, string thisName, string otherName)
    {
        var differences = new List<string>();
        void Compare<T>(string what, T mine, T theirs, Func<T, string> describe)
        {
            if (!EqualityComparer<T>.Default.Equals(mine, theirs))
            {
                differences.Add($"{what}: {describe(mine)} in {thisName}, {describe(theirs)} in {otherName}");
            }
        }

        Compare("format", Format, other.Format, f => f.ToString(CultureInfo.InvariantCulture));
        Compare("key type", KeyType, other.KeyType, t => t);
        Compare("value type", ValueType, other.ValueType, t => t);
        Compare("key size", KeySize, other.KeySize, DescribeSize);
        Compare("value size", ValueSize, other.ValueSize, DescribeSize);
        Compare("record size", RecordSize, other.RecordSize, DescribeSize);
        Compare("page size (PageSizeBits)", PageSizeBits, other.PageSizeBits, b => $"2^{b} bytes");
        Compare("log segment size (LogSegmentSizeBits)", SegmentSizeBits, other.SegmentSizeBits, b => $"2^{b} bytes");
        if (KeyHash != UnknownKeyHash && other.KeyHash != UnknownKeyHash)
        {
            Compare("key hash of the probe keys (GetHashCode64 must give the same hash for a key in every process)",
                KeyHash, other.KeyHash, h => h);
        }

        return differences;
    }

    private static string DescribeSize(int size) =>
        size < 0 ? "variable" : string.Create(CultureInfo.InvariantCulture, $"{size} bytes");

    private static string NameOf(Type type) => type.FullName ?? type.Name;

    /// <summary>
    /// The hashes of four probe keys built from fixed bytes: a changed hash function, or one that is not the same in
    /// every process (seeded per process, as <see cref="HashCode"/> is), makes every key of a recovered log unreachable.
    /// </summary>
    private static unsafe string Fingerprint<TKey>(KeyHasher<TKey> hash)
        where TKey : unmanaged
    {
        var hashes = new string[4];
        Span<byte> bytes = stackalloc byte[64];
        byte[] keyBytes = new byte[sizeof(TKey)];
        try
        {
            for (int probe = 0; probe < hashes.Length; probe++)
            {
                ulong state = 0x9E3779B97F4A7C15UL * (ulong)(probe + 1);
                for (int i = 0; i < bytes.Length; i += sizeof(ulong))
                {
                    state = (ulong)KeyHashing.Mix((long)state);
                    MemoryMarshal.Write(bytes[i..], in state);
                }

                long value;
                if (typeof(TKey) == typeof(VarBytes))
                {
                    fixed (byte* first = bytes)
                    {
                        var key = new VarBytes(first, 8 + (probe * 16));
                        value = hash(in Unsafe.As<VarBytes, TKey>(ref key));
                    }
                }
                else
                {
                    for (int i = 0; i < keyBytes.Length; i++)
                    {
                        keyBytes[i] = bytes[i % bytes.Length];
                    }

                    value = hash(in MemoryMarshal.AsRef<TKey>(keyBytes.AsSpan()));
                }

                hashes[probe] = value.ToString("x16", CultureInfo.InvariantCulture);
            }
        }
#pragma warning disable CA1031 // A user hash that rejects made-up keys only loses this check.
        catch (Exception)
#pragma warning restore CA1031
        {
            return UnknownKeyHash;
        }

        return string.Join(' ', hashes);
    }
}

/// <summary>The store's key hash, as a delegate for the identity's fingerprint.</summary>
internal delegate long KeyHasher<TKey>(in TKey key);
