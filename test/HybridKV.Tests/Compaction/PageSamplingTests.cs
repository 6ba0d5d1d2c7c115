using HybridKV.Compaction;

namespace HybridKV.Tests.Compaction;

/// <summary>
/// Which pages near the head the memory compactor measures: all of them until pages keep coming out mostly live (a
/// store larger than memory), then fewer, and all again as soon as one page's records are copied.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class PageSamplingTests
{
    private const int BufferPages = 4;

    /// <summary>Feeds pages from <paramref name="first"/> on, each examined one's outcome given by
    /// <paramref name="mostlyLive"/>; returns the numbers of the pages examined.</summary>
    private static List<long> Run(PageSampling sampling, long first, int pages, Func<long, bool> mostlyLive)
    {
        var examined = new List<long>();
        for (long page = first; page < first + pages; page++)
        {
            if (sampling.Examines(page))
            {
                examined.Add(page);
                sampling.Examined(mostlyLive(page));
            }
        }

        return examined;
    }

    [Fact]
    public void Every_page_is_examined_while_pages_are_copied()
    {
        var sampling = new PageSampling(BufferPages);

        List<long> examined = Run(sampling, 0, 100, page => page % 3 == 0);

        Assert.Equal(Enumerable.Range(0, 100).Select(p => (long)p), examined);
        Assert.Equal(1, sampling.Stride);
    }

    [Fact]
    public void A_memory_of_mostly_live_pages_in_a_row_halves_the_pages_examined_and_so_on_up_to_one_in_sixteen()
    {
        var sampling = new PageSampling(BufferPages);

        List<long> examined = Run(sampling, 0, 1000, _ => true);

        // Four at stride 1 (pages 0-3), four at 2 (4, 6, 8, 10), four at 4 (12-24), four at 8 (28-52), then 16.
        Assert.Equal([0, 1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 56], examined.Take(16));
        Assert.All(examined.Skip(16), page => Assert.Equal(0, page % PageSampling.MaxStride));
        Assert.Equal(PageSampling.MaxStride, sampling.Stride);
        Assert.InRange(examined.Count, 1000 / PageSampling.MaxStride, (1000 / PageSampling.MaxStride) + 16);
    }

    [Fact]
    public void The_first_page_whose_records_are_copied_makes_every_page_examined_again()
    {
        var sampling = new PageSampling(BufferPages);
        Run(sampling, 0, 1000, _ => true);

        List<long> examined = Run(sampling, 1000, 100, page => page < 1008);

        // 1008 is the first examined page at stride 16 and the first copied: every page after it is examined.
        Assert.Equal(1008, examined[0]);
        Assert.Equal(Enumerable.Range(1009, 91).Select(p => (long)p), examined.Skip(1));
        Assert.Equal(1, sampling.Stride);
    }

    [Fact]
    public void A_copied_page_within_a_run_starts_the_run_again()
    {
        var sampling = new PageSampling(BufferPages);

        // Three mostly live, one copied, over and over: never a whole memory of mostly live pages in a row.
        List<long> examined = Run(sampling, 0, 200, page => page % 4 != 3);

        Assert.Equal(200, examined.Count);
        Assert.Equal(1, sampling.Stride);
    }

    [Fact]
    public void A_page_tried_again_is_chosen_again()
    {
        var sampling = new PageSampling(BufferPages);
        Run(sampling, 0, 1000, _ => true);

        // Asking changes nothing: the same page gets the same answer, however often it is asked.
        Assert.True(sampling.Examines(1024));
        Assert.True(sampling.Examines(1024));
        Assert.False(sampling.Examines(1025));
        Assert.False(sampling.Examines(1025));
    }
}
