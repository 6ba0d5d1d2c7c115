using HybridKV.Compaction;

namespace HybridKV.Tests.Compaction;

/// <summary>The live data of the last trip through memory, which decides whether a mostly live page is kept.</summary>
[Trait("Category", "Checkpoint")]
public sealed class LiveBytesWindowTests
{
    [Fact]
    public void Before_a_full_trip_the_sum_is_of_the_pages_seen_so_far()
    {
        var window = new LiveBytesWindow(4);
        Assert.Equal(0, window.SumBeforeNext);
        window.Add(10);
        window.Add(20);
        Assert.Equal(30, window.SumBeforeNext);
    }

    [Fact]
    public void Once_full_the_sum_leaves_out_the_page_the_next_one_replaces()
    {
        var window = new LiveBytesWindow(3);
        window.Add(10);
        window.Add(20);
        window.Add(30);
        Assert.Equal(50, window.SumBeforeNext); // 10 is pushed out by the next page
        window.Add(40);
        Assert.Equal(70, window.SumBeforeNext); // 30 + 40; 20 goes next
        window.Add(1);
        window.Add(2);
        window.Add(3);
        Assert.Equal(5, window.SumBeforeNext);
    }
}
