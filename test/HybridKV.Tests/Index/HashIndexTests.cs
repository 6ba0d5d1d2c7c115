using HybridKV.Index;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Index;

[Trait("Category", "Index")]
public sealed class HashIndexTests
{
    private static KeyHash HashFor(ushort tag, long offset) => new(((long)tag << HashBucketEntry.TagShift) | offset);

    [Fact]
    public void Entry_word_round_trips_address_tag_and_tentative_bit()
    {
        var entry = new HashBucketEntry(0x7FFF, HashBucketEntry.AddressMask, tentative: true);
        Assert.Equal(0x7FFF, entry.Tag);
        Assert.Equal(HashBucketEntry.AddressMask, entry.Address);
        Assert.True(entry.Tentative);

        var other = new HashBucketEntry(5, 1234, tentative: false);
        Assert.Equal(5, other.Tag);
        Assert.Equal(1234, other.Address);
        Assert.False(other.Tentative);
    }

    [Fact]
    public void Forced_collisions_fill_overflow_chains_and_every_tag_stays_findable()
    {
        using var index = new HashIndex(2);
        const int Tags = 100;
        for (ushort tag = 0; tag < Tags; tag++)
        {
            IndexSlot slot = index.FindOrCreateEntry(HashFor(tag, 1));
            Assert.Equal(HashIndex.TentativeRecordAddress, slot.Address);
            Assert.True(index.TryUpdateEntry(ref slot, 1000 + tag));
        }

        // 100 tags in one bucket of 7 need at least 14 overflow buckets.
        Assert.True(index.OverflowBucketCount >= (Tags + 6) / 7 - 1, $"overflow buckets: {index.OverflowBucketCount}");
        for (ushort tag = 0; tag < Tags; tag++)
        {
            Assert.True(index.TryFindEntry(HashFor(tag, 1), out IndexSlot found));
            Assert.Equal(1000 + tag, found.Address);
            Assert.False(index.TryFindEntry(HashFor(tag, 0), out _));
        }

        // Deleting frees slots that later inserts reuse instead of growing the chain.
        long overflowBefore = index.OverflowBucketCount;
        for (ushort tag = 0; tag < Tags; tag += 2)
        {
            Assert.True(index.TryFindEntry(HashFor(tag, 1), out IndexSlot found));
            Assert.True(index.TryDeleteEntry(ref found));
            Assert.False(index.TryFindEntry(HashFor(tag, 1), out _));
        }

        for (ushort tag = 200; tag < 200 + Tags / 2; tag++)
        {
            index.FindOrCreateEntry(HashFor(tag, 1));
        }

        Assert.Equal(overflowBefore, index.OverflowBucketCount);
        AssertAtMostOneEntryPerTag(index);
    }

    [Fact]
    public void Tag_zero_matches_neither_an_empty_word_nor_the_overflow_word_and_each_tag_finds_its_own_entry()
    {
        using var index = new HashIndex(2);
        // Tags 1 to 9 in one bucket: its seven entries full, an overflow bucket linked from its eighth word.
        for (ushort tag = 1; tag <= 9; tag++)
        {
            IndexSlot slot = index.FindOrCreateEntry(HashFor(tag, 1));
            Assert.True(index.TryUpdateEntry(ref slot, 100 + tag));
        }

        Assert.False(index.TryFindEntry(HashFor(0, 1), out _));
        Assert.False(index.TryFindEntry(HashFor(0, 0), out _));
        for (ushort tag = 1; tag <= 9; tag++)
        {
            Assert.True(index.TryFindEntry(HashFor(tag, 1), out IndexSlot found));
            Assert.Equal(100 + tag, found.Address);
        }

        // A deleted entry leaves an empty word before the others: the look-up goes past it.
        Assert.True(index.TryFindEntry(HashFor(2, 1), out IndexSlot second));
        Assert.True(index.TryDeleteEntry(ref second));
        Assert.False(index.TryFindEntry(HashFor(2, 1), out _));
        Assert.False(index.TryFindEntry(HashFor(0, 1), out _));
        Assert.True(index.TryFindEntry(HashFor(7, 1), out IndexSlot seventh));
        Assert.Equal(107, seventh.Address);

        IndexSlot zero = index.FindOrCreateEntry(HashFor(0, 1));
        Assert.True(index.TryUpdateEntry(ref zero, 100));
        Assert.True(index.TryFindEntry(HashFor(0, 1), out IndexSlot foundZero));
        Assert.Equal(100, foundZero.Address);
    }

    [Fact]
    public void A_stale_slot_cannot_update_or_delete_an_entry_that_changed()
    {
        using var index = new HashIndex(4);
        KeyHash hash = HashFor(7, 2);
        IndexSlot stale = index.FindOrCreateEntry(hash);
        IndexSlot fresh = index.FindOrCreateEntry(hash);
        Assert.True(index.TryUpdateEntry(ref fresh, 500));

        Assert.False(index.TryUpdateEntry(ref stale, 600));
        Assert.False(index.TryDeleteEntry(ref stale));
        Assert.True(index.TryFindEntry(hash, out IndexSlot now));
        Assert.Equal(500, now.Address);
    }

    /// <summary>
    /// FASTER §3.2's invariant under contention: threads insert, count through and delete entries for a few
    /// (offset, tag) pairs that all collide in two buckets; after every round no pair has two entries and no
    /// tentative entry is left behind, and (in the rounds without deletes) no increment is lost.
    /// </summary>
    [Fact]
    public void Concurrent_inserts_and_deletes_never_leave_two_entries_for_one_offset_and_tag()
    {
        using var index = new HashIndex(2);
        int threads = Math.Max(4, Environment.ProcessorCount * 2);
        const int Tags = 24;
        int rounds = 200 * TestScale.Factor;
        const int OperationsPerRound = 2_000;
        using var barrier = new Barrier(threads);
        var failures = new List<string>();
        long[] expectedCounts = new long[Tags];

        void Work(int seed)
        {
            var random = new Random(seed);
            for (int round = 0; round < rounds; round++)
            {
                bool withDeletes = round % 2 == 0;
                for (int i = 0; i < OperationsPerRound; i++)
                {
                    ushort tag = (ushort)random.Next(Tags);
                    KeyHash hash = HashFor(tag, tag & 1);
                    if (withDeletes && random.Next(3) == 0)
                    {
                        if (index.TryFindEntry(hash, out IndexSlot victim))
                        {
                            index.TryDeleteEntry(ref victim);
                        }

                        continue;
                    }

                    // Count through the entry's address field: a second visible entry would split the count.
                    while (true)
                    {
                        IndexSlot slot = index.FindOrCreateEntry(hash);
                        if (index.TryUpdateEntry(ref slot, slot.Address + 1))
                        {
                            break;
                        }
                    }

                    if (!withDeletes)
                    {
                        Interlocked.Increment(ref expectedCounts[tag]);
                    }
                }

                if (barrier.SignalAndWait(TimeSpan.FromMinutes(2)) && seed == 0)
                {
                    string? problem = CheckRound(index, Tags, withDeletes ? null : expectedCounts);
                    if (problem != null)
                    {
                        lock (failures)
                        {
                            failures.Add($"round {round}: {problem}");
                        }
                    }

                    if (withDeletes)
                    {
                        // Start each counting round from known counts.
                        for (ushort tag = 0; tag < Tags; tag++)
                        {
                            KeyHash hash = HashFor(tag, tag & 1);
                            expectedCounts[tag] = index.TryFindEntry(hash, out IndexSlot s)
                                ? s.Address - HashIndex.TentativeRecordAddress
                                : 0;
                        }
                    }
                }

                barrier.SignalAndWait(TimeSpan.FromMinutes(2));
            }
        }

        var workers = Enumerable.Range(0, threads).Select(i => new Thread(() => Work(i))).ToList();
        workers.ForEach(t => t.Start());
        workers.ForEach(t => t.Join());

        Assert.Empty(failures);
        Assert.True(index.OverflowBucketCount > 0);
    }

    private static string? CheckRound(HashIndex index, int tags, long[]? expectedCounts)
    {
        var seen = new Dictionary<(long Offset, ushort Tag), int>();
        string? problem = null;
        index.ForEachEntry((offset, entry) =>
        {
            if (entry.Tentative)
            {
                problem ??= $"tentative entry left behind: {entry}";
            }

            seen[(offset, entry.Tag)] = seen.GetValueOrDefault((offset, entry.Tag)) + 1;
        });
        if (problem != null)
        {
            return problem;
        }

        foreach (var pair in seen.Where(p => p.Value > 1))
        {
            return $"offset {pair.Key.Offset} tag {pair.Key.Tag} has {pair.Value} entries";
        }

        if (expectedCounts != null)
        {
            for (ushort tag = 0; tag < tags; tag++)
            {
                KeyHash hash = HashFor(tag, tag & 1);
                long actual = index.TryFindEntry(hash, out IndexSlot slot)
                    ? slot.Address - HashIndex.TentativeRecordAddress
                    : 0;
                if (actual != expectedCounts[tag])
                {
                    return $"tag {tag} counted {actual}, expected {expectedCounts[tag]}";
                }
            }
        }

        return null;
    }

    private static void AssertAtMostOneEntryPerTag(HashIndex index)
    {
        var seen = new HashSet<(long, ushort)>();
        index.ForEachEntry((offset, entry) =>
        {
            Assert.False(entry.Tentative);
            Assert.True(seen.Add((offset, entry.Tag)), $"duplicate entry {entry} in bucket {offset}");
        });
    }
}
