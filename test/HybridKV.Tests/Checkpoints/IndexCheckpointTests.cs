using HybridKV.Index;
using HybridKV.Tests.Support;
using HybridKV.Utilities;

namespace HybridKV.Tests.Checkpoints;

[Trait("Category", "Checkpoint")]
public sealed class IndexCheckpointTests
{
    private static KeyHash HashFor(ushort tag, long offset) => new(((long)tag << HashBucketEntry.TagShift) | offset);

    private static Dictionary<(long, ushort), long> Entries(HashIndex index)
    {
        var entries = new Dictionary<(long, ushort), long>();
        index.ForEachEntry((offset, entry) => entries.Add((offset, entry.Tag), entry.Address));
        return entries;
    }

    [Fact]
    public async Task An_index_with_overflow_chains_round_trips_without_its_tentative_entries()
    {
        using var index = new HashIndex(4);
        for (ushort tag = 0; tag < 60; tag++)
        {
            IndexSlot slot = index.FindOrCreateEntry(HashFor(tag, tag % 2));
            Assert.True(index.TryUpdateEntry(ref slot, 1000 + tag));
        }

        for (ushort tag = 0; tag < 60; tag += 5)
        {
            Assert.True(index.TryFindEntry(HashFor(tag, tag % 2), out IndexSlot victim));
            Assert.True(index.TryDeleteEntry(ref victim));
        }

        // An insert caught between its two phases.
        IndexSlot halfInserted = index.FindOrCreateEntry(HashFor(500, 3));
        halfInserted.Word = new HashBucketEntry(500, 77, tentative: true).Word;

        using var stream = new MemoryStream();
        await index.WriteCheckpointAsync(stream, CancellationToken.None);
        stream.Position = 0;
        using HashIndex loaded = await HashIndex.ReadCheckpointAsync(stream, CancellationToken.None);

        var expected = Entries(index);
        expected.Remove((3, 500));
        Assert.Equal(expected, Entries(loaded));
        Assert.Equal(index.OverflowBucketCount, loaded.OverflowBucketCount);
        Assert.True(loaded.TryFindEntry(HashFor(7, 1), out IndexSlot found));
        Assert.Equal(1007, found.Address);
        Assert.False(loaded.TryFindEntry(HashFor(500, 3), out _));

        // The loaded index keeps working: new tags extend its chains.
        for (ushort tag = 1000; tag < 1040; tag++)
        {
            IndexSlot slot = loaded.FindOrCreateEntry(HashFor(tag, 0));
            Assert.True(loaded.TryUpdateEntry(ref slot, tag));
        }

        Assert.Equal(expected.Count + 40, Entries(loaded).Count);
    }

    /// <summary>
    /// The checkpoint is fuzzy: it is copied while a thread keeps raising every entry's address. Each copied entry must
    /// still be a value that existed between the start and the end of the copy, never a torn or invented one.
    /// </summary>
    [Fact]
    public async Task A_checkpoint_taken_during_updates_holds_only_values_that_existed_while_it_was_taken()
    {
        using var index = new HashIndex(1 << 12);
        const int Tags = 20_000;
        for (int i = 0; i < Tags; i++)
        {
            IndexSlot slot = index.FindOrCreateEntry(HashFor((ushort)(i & 0x7FFF), i % (1 << 12)));
            index.TryUpdateEntry(ref slot, 1_000);
        }

        var before = Entries(index);
        using var stop = new CancellationTokenSource();
        long updates = 0;
        Task updater = Task.Run(() =>
        {
            var random = new Random(5);
            while (!stop.IsCancellationRequested)
            {
                int i = random.Next(Tags);
                if (index.TryFindEntry(HashFor((ushort)(i & 0x7FFF), i % (1 << 12)), out IndexSlot slot) &&
                    index.TryUpdateEntry(ref slot, slot.Address + 1))
                {
                    Interlocked.Increment(ref updates);
                }
            }
        });

        // The copy starts once updates are flowing, and pauses between chunks so that they keep flowing during it.
        var spinner = new SpinWait();
        while (Interlocked.Read(ref updates) < 1_000)
        {
            spinner.SpinOnce();
        }

        long updatesBeforeCopy = Interlocked.Read(ref updates);
        using var stream = new MemoryStream();
        await index.WriteCheckpointAsync(new PausingStream(stream), CancellationToken.None);
        long updatesDuringCopy = Interlocked.Read(ref updates) - updatesBeforeCopy;
        await stop.CancelAsync();
        await updater;
        var after = Entries(index);

        stream.Position = 0;
        using HashIndex loaded = await HashIndex.ReadCheckpointAsync(stream, CancellationToken.None);
        var copied = Entries(loaded);
        Assert.Equal(before.Keys.Order(), copied.Keys.Order());
        Assert.All(copied, entry =>
            Assert.InRange(entry.Value, before[entry.Key], after[entry.Key]));
        Assert.True(updatesDuringCopy > 0, "no update overlapped the copy");
    }

    /// <summary>Writes through to a stream, yielding the thread for a moment before each write.</summary>
    private sealed class PausingStream(Stream inner) : WriteThroughStream(inner)
    {
        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            await Task.Delay(1, cancellationToken);
            await Inner.WriteAsync(buffer, cancellationToken);
        }
    }

    [Fact]
    public async Task A_truncated_or_foreign_stream_is_rejected_clearly()
    {
        using var index = new HashIndex(8);
        using var stream = new MemoryStream();
        await index.WriteCheckpointAsync(stream, CancellationToken.None);
        byte[] bytes = stream.ToArray();

        using var truncated = new MemoryStream(bytes[..(bytes.Length - 10)]);
        var error = await Assert.ThrowsAsync<InvalidDataException>(
            () => HashIndex.ReadCheckpointAsync(truncated, CancellationToken.None));
        Assert.Contains("truncated", error.Message, StringComparison.Ordinal);

        bytes[0] = (byte)'X';
        using var foreign = new MemoryStream(bytes);
        error = await Assert.ThrowsAsync<InvalidDataException>(
            () => HashIndex.ReadCheckpointAsync(foreign, CancellationToken.None));
        Assert.Contains("not a HybridKV index checkpoint", error.Message, StringComparison.Ordinal);
    }
}
