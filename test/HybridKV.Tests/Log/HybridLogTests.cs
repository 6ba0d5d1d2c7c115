using HybridKV.Epochs;
using HybridKV.Log;

namespace HybridKV.Tests.Log;

[Trait("Category", "Operations")]
public sealed class HybridLogTests
{
    private const int PageSizeBits = 9;
    private const int PageSize = 1 << PageSizeBits;
    private const int RecordSize = 64;

    [Fact]
    public void Allocations_fill_pages_without_straddling_and_move_the_read_only_offset_at_page_turns()
    {
        using var epoch = new LightEpoch(2);
        using var log = new HybridLog(epoch, PageSizeBits, bufferPages: 8, mutablePages: 2);
        Assert.True(epoch.TryAcquireEntry(out int entry));
        epoch.Protect(entry);
        var addresses = new List<long>();
        for (int i = 0; i < 40; i++)
        {
            Assert.Equal(AllocationResult.Success, log.TryAllocate(RecordSize, entry, out long address));
            addresses.Add(address);
        }

        epoch.Unprotect(entry);
        Assert.Equal(LogAddress.FirstValid, addresses[0]);
        Assert.All(addresses, a => Assert.True(a % PageSize + RecordSize <= PageSize, $"{a} straddles a page"));
        Assert.Equal(addresses.Count, addresses.Distinct().Count());
        long lastPage = addresses[^1] >> PageSizeBits;
        Assert.Equal((lastPage + 1 - 2) << PageSizeBits, log.ReadOnlyAddress);
        Assert.Equal(log.ReadOnlyAddress, log.SafeReadOnlyAddress);
        Assert.Equal(addresses[^1] + RecordSize, log.TailAddress);
    }

    /// <summary>
    /// A regression test for a deadlock: a thread waiting for another's page turn while protected in an old epoch
    /// held back the trigger actions, the drain list was full, and the turning thread could not publish its
    /// read-only shift until those actions ran. Waiters now move their epoch forward while they wait.
    /// </summary>
    [Fact]
    public async Task A_protected_thread_waiting_for_a_page_turn_does_not_block_the_turn()
    {
        using var epoch = new LightEpoch(4);
        using var log = new HybridLog(epoch, PageSizeBits, bufferPages: 8, mutablePages: 1);
        Assert.True(epoch.TryAcquireEntry(out int waiter));
        Assert.True(epoch.TryAcquireEntry(out int turner));

        // Fill page 0 exactly, so that the turner's next allocation is the one that crosses into page 1.
        epoch.Protect(waiter);
        for (long used = LogAddress.FirstValid; used < PageSize; used += RecordSize)
        {
            Assert.Equal(AllocationResult.Success, log.TryAllocate(RecordSize, waiter, out _));
        }

        // Actions bumped while the waiter sits in an old epoch cannot run: the drain list fills up.
        int ran = 0;
        for (int i = 0; i < 256; i++)
        {
            epoch.BumpCurrentEpoch(() => Interlocked.Increment(ref ran));
        }

        Assert.Equal(256, epoch.PendingActionCount);
        long epochBeforeTurn = epoch.CurrentEpoch;
        long turnerAddress = 0;
        var turnerThread = new Thread(() =>
        {
            epoch.Protect(turner);
            log.TryAllocate(RecordSize, turner, out turnerAddress);
            epoch.Unprotect(turner);
        }) { IsBackground = true };
        turnerThread.Start();

        // The turner has crossed the boundary and is trying to publish its read-only shift.
        var spinner = new SpinWait();
        while (epoch.CurrentEpoch == epochBeforeTurn)
        {
            spinner.SpinOnce();
        }

        Task<long> waiting = Task.Factory.StartNew(
            () =>
            {
                Assert.Equal(AllocationResult.Success, log.TryAllocate(RecordSize, waiter, out long address));
                return address;
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);

        long waiterAddress = await waiting.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(turnerThread.Join(TimeSpan.FromSeconds(30)));
        epoch.Unprotect(waiter);

        Assert.Equal(PageSize, turnerAddress);
        Assert.Equal(PageSize + RecordSize, waiterAddress);
        Assert.Equal(256, ran);
    }
}
