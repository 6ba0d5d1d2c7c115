using System.Buffers.Binary;
using System.Diagnostics;
using System.Runtime.InteropServices;

namespace HybridKV.Index;

/// <summary>
/// The fuzzy index checkpoint of FASTER §6.5 and CPR §6: the buckets are copied while operations keep changing them,
/// without locks. Each 8-byte entry is copied atomically, so every copied entry is one that really existed; which
/// changes made it in is what recovery's replay of the log from the checkpoint's start address settles.
/// </summary>
internal sealed partial class HashIndex
{
    private static ReadOnlySpan<byte> Magic => "HKVIDX01"u8;
    private const int HeaderBytes = 24;
    private const int BucketsPerChunk = 1024;

    /// <summary>
    /// Writes the index to <paramref name="destination"/>: a header, the primary buckets, then the overflow buckets in
    /// id order. Tentative entries are written as empty: their inserts had not finished. The caller holds the structure
    /// (<see cref="LockStructureAsync"/>), so no resize changes the table or its size under the copy, and the header's
    /// bucket count is the size of the table copied; recovery loads whatever size was written.
    /// </summary>
    public async Task WriteCheckpointAsync(Stream destination, CancellationToken cancellationToken)
    {
        Debug.Assert(ResizeStatus.Phase == ResizePhase.Stable, "An index checkpoint excludes resizes.");
        long overflowCount = _overflow.AllocatedCount;
        byte[] header = new byte[HeaderBytes];
        Magic.CopyTo(header);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(8), BucketCount);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(16), overflowCount);
        await destination.WriteAsync(header, cancellationToken).ConfigureAwait(false);

        byte[] chunk = new byte[BucketsPerChunk * HashBucket.Bytes];
        for (long first = 0; first < BucketCount; first += BucketsPerChunk)
        {
            int count = (int)Math.Min(BucketsPerChunk, BucketCount - first);
            CopyBuckets(overflow: false, first, count, chunk);
            await destination.WriteAsync(chunk.AsMemory(0, count * HashBucket.Bytes), cancellationToken).ConfigureAwait(false);
        }

        for (long first = 1; first <= overflowCount; first += BucketsPerChunk)
        {
            int count = (int)Math.Min(BucketsPerChunk, overflowCount - first + 1);
            CopyBuckets(overflow: true, first, count, chunk);
            await destination.WriteAsync(chunk.AsMemory(0, count * HashBucket.Bytes), cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Reads an index written by <see cref="WriteCheckpointAsync"/>.</summary>
    /// <exception cref="InvalidDataException">The stream is not an index checkpoint, or is truncated.</exception>
    public static async Task<HashIndex> ReadCheckpointAsync(Stream source, CancellationToken cancellationToken)
    {
        byte[] header = new byte[HeaderBytes];
        await ReadExactlyAsync(source, header, "header", cancellationToken).ConfigureAwait(false);
        if (!header.AsSpan(0, 8).SequenceEqual(Magic))
        {
            throw new InvalidDataException("This is not a HybridKV index checkpoint (wrong magic number).");
        }

        long bucketCount = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8));
        long overflowCount = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(16));
        if (bucketCount < 1 || (bucketCount & (bucketCount - 1)) != 0 || overflowCount < 0)
        {
            throw new InvalidDataException(
                $"The index checkpoint header is invalid ({bucketCount} buckets, {overflowCount} overflow buckets).");
        }

        var index = new HashIndex(bucketCount);
        try
        {
            byte[] chunk = new byte[BucketsPerChunk * HashBucket.Bytes];
            for (long first = 0; first < bucketCount; first += BucketsPerChunk)
            {
                int count = (int)Math.Min(BucketsPerChunk, bucketCount - first);
                await ReadExactlyAsync(source, chunk.AsMemory(0, count * HashBucket.Bytes), "buckets", cancellationToken)
                    .ConfigureAwait(false);
                index.PastePrimaryBuckets(first, count, chunk, overflowCount);
            }

            for (long first = 1; first <= overflowCount; first += BucketsPerChunk)
            {
                int count = (int)Math.Min(BucketsPerChunk, overflowCount - first + 1);
                await ReadExactlyAsync(source, chunk.AsMemory(0, count * HashBucket.Bytes), "overflow buckets",
                    cancellationToken).ConfigureAwait(false);
                for (int i = 0; i < count; i++)
                {
                    index.PasteOverflowBucket(chunk.AsSpan(i * HashBucket.Bytes), overflowCount);
                }
            }
        }
        catch
        {
            index.Dispose();
            throw;
        }

        index._overflowLinked = index.MeasureChains().OverflowBuckets;
        return index;
    }

    private unsafe void CopyBuckets(bool overflow, long first, int count, byte[] chunk)
    {
        Span<long> words = MemoryMarshal.Cast<byte, long>(chunk.AsSpan(0, count * HashBucket.Bytes));
        for (int b = 0; b < count; b++)
        {
            HashBucket* bucket = overflow ? _overflow.GetBucket(first + b) : _buckets + first + b;
            long* source = bucket->Words;
            for (int w = 0; w < 8; w++)
            {
                long word = Volatile.Read(ref source[w]);
                bool tentative = w < HashBucket.EntryCount && new HashBucketEntry(word).Tentative;
                words[(b * 8) + w] = tentative ? 0 : word;
            }
        }
    }

    private unsafe void PastePrimaryBuckets(long first, int count, ReadOnlySpan<byte> chunk, long overflowCount) =>
        PasteBuckets(_buckets + first, count, chunk, overflowCount);

    private unsafe void PasteOverflowBucket(ReadOnlySpan<byte> chunk, long overflowCount) =>
        PasteBuckets(_overflow.GetBucket(_overflow.Allocate()), 1, chunk, overflowCount);

    private static unsafe void PasteBuckets(HashBucket* destination, int count, ReadOnlySpan<byte> chunk, long overflowCount)
    {
        ReadOnlySpan<long> words = MemoryMarshal.Cast<byte, long>(chunk[..(count * HashBucket.Bytes)]);
        for (int b = 0; b < count; b++)
        {
            long* target = destination[b].Words;
            for (int w = 0; w < HashBucket.EntryCount; w++)
            {
                target[w] = words[(b * 8) + w];
            }

            // An overflow bucket allocated after the count was taken is not in the checkpoint: its entries belong to
            // records after the checkpoint's start, which recovery's replay inserts again.
            long overflow = words[(b * 8) + HashBucket.OverflowWordIndex] & HashBucket.OverflowIdMask;
            target[HashBucket.OverflowWordIndex] = overflow <= overflowCount ? overflow : 0;
        }
    }

    private static async Task ReadExactlyAsync(Stream source, Memory<byte> buffer, string what, CancellationToken token)
    {
        try
        {
            await source.ReadExactlyAsync(buffer, token).ConfigureAwait(false);
        }
        catch (EndOfStreamException error)
        {
            throw new InvalidDataException($"The index checkpoint is truncated in its {what}.", error);
        }
    }
}
