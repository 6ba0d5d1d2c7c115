using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.InteropServices;

namespace HybridKV.Index;

/// <summary>
/// Hands out cache-aligned overflow buckets on demand (FASTER §3.1). Buckets are named by a 1-based id rather than a
/// pointer, so that the index can later be written to a checkpoint and read back at other addresses. Memory comes in
/// chunks that live until the allocator is disposed, so a bucket reached through a stale id is never freed memory.
/// </summary>
internal sealed unsafe class OverflowBucketAllocator : IDisposable
{
    private const int ChunkBits = 10;
    private const int ChunkSize = 1 << ChunkBits;
    private const int ChunkMask = ChunkSize - 1;
    private const int MaxChunks = 1 << 14;

    private readonly nint[] _chunks = new nint[MaxChunks];
    private readonly ConcurrentQueue<long> _returned = new();
    private readonly object _growLock = new();

    // The last id handed out; ids start at 1 so that 0 can mean "no overflow bucket".
    private long _lastId;

    /// <summary>The number of overflow buckets ever handed out (including returned ones).</summary>
    public long AllocatedCount => Volatile.Read(ref _lastId);

    /// <summary>Returns the id of a zeroed bucket.</summary>
    public long Allocate()
    {
        if (_returned.TryDequeue(out long reused))
        {
            NativeMemory.Clear(GetBucket(reused), HashBucket.Bytes);
            return reused;
        }

        long id = Interlocked.Increment(ref _lastId);
        long chunk = id >> ChunkBits;
        if (chunk >= MaxChunks)
        {
            throw new InvalidOperationException(
                $"The hash index has used all {(long)MaxChunks * ChunkSize} overflow buckets; size the index larger.");
        }

        if (Volatile.Read(ref _chunks[chunk]) == 0)
        {
            // Rare (once per 1024 buckets): a lock keeps two threads from allocating the same chunk twice.
            lock (_growLock)
            {
                if (_chunks[chunk] == 0)
                {
                    nuint bytes = (nuint)ChunkSize * HashBucket.Bytes;
                    void* memory = NativeMemory.AlignedAlloc(bytes, HashBucket.Bytes);
                    NativeMemory.Clear(memory, bytes);
                    Volatile.Write(ref _chunks[chunk], (nint)memory);
                }
            }
        }

        return id;
    }

    /// <summary>Takes back a bucket that was never published (its insert lost a race).</summary>
    public void Return(long id) => _returned.Enqueue(id);

    /// <summary>The bucket named by <paramref name="id"/>.</summary>
    public HashBucket* GetBucket(long id)
    {
        Debug.Assert(id > 0 && id <= Volatile.Read(ref _lastId), "Unknown overflow bucket id.");
        return (HashBucket*)Volatile.Read(ref _chunks[id >> ChunkBits]) + (id & ChunkMask);
    }

    public void Dispose()
    {
        for (int i = 0; i < _chunks.Length; i++)
        {
            if (_chunks[i] != 0)
            {
                NativeMemory.AlignedFree((void*)_chunks[i]);
                _chunks[i] = 0;
            }
        }
    }
}
