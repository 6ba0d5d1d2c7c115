using System.Diagnostics;

namespace HybridKV.Compaction;

/// <summary>
/// Which of the pages nearing the head the <see cref="MemoryCompactor"/> examines. In a store larger than memory every
/// page comes out mostly live, and measuring each one (an index look-up for each record of an eighth of the page) took
/// an eighth of a core in the soak for nothing. So after a memory's worth of mostly live pages examined in a row, only
/// every second page is examined, then every fourth, up to every <see cref="MaxStride"/>th; the first page whose live
/// records were copied makes every page examined again. A page not examined leaves memory with its records, which is
/// always correct, as when the compactor falls behind.
/// </summary>
/// <remarks>The choice depends on the page's number only, so a page tried again (a commit stopped it) is chosen
/// again.</remarks>
internal sealed class PageSampling
{
    /// <summary>The most pages one examined page stands for.</summary>
    public const int MaxStride = 16;

    private readonly int _runToWiden;
    private int _mostlyLiveRun;

    /// <param name="bufferPages">The log's pages in memory: how many mostly live pages in a row, at each stride,
    /// widen it.</param>
    public PageSampling(int bufferPages)
    {
        Debug.Assert(bufferPages > 0);
        _runToWiden = bufferPages;
    }

    /// <summary>One examined page for this many (a power of two).</summary>
    public int Stride { get; private set; } = 1;

    /// <summary>Whether the page numbered <paramref name="pageNumber"/> (its address over the page size) is
    /// examined.</summary>
    public bool Examines(long pageNumber) => (pageNumber & (Stride - 1)) == 0;

    /// <summary>An examined page's outcome: <paramref name="mostlyLive"/> when it left with its records.</summary>
    public void Examined(bool mostlyLive)
    {
        if (!mostlyLive)
        {
            Stride = 1;
            _mostlyLiveRun = 0;
        }
        else if (++_mostlyLiveRun >= _runToWiden && Stride < MaxStride)
        {
            Stride *= 2;
            _mostlyLiveRun = 0;
        }
    }
}
