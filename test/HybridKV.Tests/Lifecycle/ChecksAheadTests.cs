using HybridKV.Compaction;

namespace HybridKV.Tests.Lifecycle;

/// <summary>
/// The checks a compaction holds for pages further on in its range (issue 18): each found again from its cursor's
/// page, none from another's, and a range longer than the pages it keeps a word for hands the rest back.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class ChecksAheadTests
{
    private const int PageBits = 12;
    private const long Page = 1L << PageBits;

    [Fact]
    public void Each_check_is_found_from_its_cursors_page_and_only_there_until_the_page_is_answered()
    {
        var checks = new ChecksAhead<long>();
        long from = 3 * Page + 100;
        checks.Start(from, 10 * Page, PageBits);
        var added = new Dictionary<long, List<long>>();
        for (long address = from; address < from + 3_000; address += 8)
        {
            long cursor = address + (address * 7919 % (5 * Page));
            if (checks.TryAdd(cursor, address, key: address * 3))
            {
                long page = cursor & ~(Page - 1);
                (added.TryGetValue(page, out List<long>? list) ? list : added[page] = []).Add(address);
            }
            else
            {
                Assert.True(cursor >= 10 * Page, $"a cursor in the range ({cursor}) was refused");
            }
        }

        Assert.True(added.Count > 2, "the checks span several pages");
        for (long page = 3 * Page; page < 10 * Page; page += Page)
        {
            var found = new List<long>();
            for (int i = checks.FirstOf(page); i >= 0; i = checks.Next(i))
            {
                Assert.Equal(page, checks[i].Cursor & ~(Page - 1));
                Assert.Equal(checks[i].Address * 3, checks[i].Key);
                found.Add(checks[i].Address);
            }

            Assert.Equal((added.TryGetValue(page, out List<long>? expected) ? expected : []).Order(), found.Order());
            checks.Answered(page);
            Assert.True(checks.FirstOf(page) < 0);
        }
    }

    [Fact]
    public void A_range_longer_than_the_pages_it_keeps_hands_back_the_checks_past_them()
    {
        var checks = new ChecksAhead<long>();
        long until = (ChecksAhead<long>.MaxPages + 10) * Page;
        checks.Start(0, until, PageBits);
        long last = (ChecksAhead<long>.MaxPages - 1) * Page;
        long past = ChecksAhead<long>.MaxPages * Page;

        Assert.True(checks.TryAdd(last + 8, 0, key: 1));
        Assert.False(checks.TryAdd(past + 8, 0, key: 2));
        Assert.True(checks.FirstOf(last) >= 0);
        Assert.True(checks.FirstOf(past) < 0);
        checks.Answered(past);
        checks.Answered(last);
        Assert.True(checks.FirstOf(last) < 0);
    }
}
