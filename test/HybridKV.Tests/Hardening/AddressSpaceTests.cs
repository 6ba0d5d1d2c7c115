using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>The end of the log's address space is a clear error naming the limit (issue 16, item 11).</summary>
[Trait("Category", "Hardening")]
public sealed class AddressSpaceTests
{
    [Theory]
    [InlineData(9)]
    [InlineData(12)]
    [InlineData(22)]
    public void Writing_past_the_end_of_the_address_space_throws_naming_the_limit(int pageSizeBits)
    {
        using var device = new MemoryDevice(512, 1L << 30);
        StoreSettings settings = StoreOnDevice.Settings(device: device) with
        {
            PageSizeBits = pageSizeBits,
            MemorySizeBytes = 4L << pageSizeBits,
            LogSegmentSizeBits = 30,
        };
        using var store = StoreOnDevice.Create(settings);
        long limit = store.Engine.Log.AddressLimit;
        Assert.Equal(Math.Min(1L << 48, 1L << (31 + pageSizeBits)), limit);

        // As recovery would reopen a log whose tail is two pages short of the end.
        long tail = limit - (2L << pageSizeBits);
        store.Engine.Log.RestoreForRecovery(tail, tail, []);
        using var session = store.NewSession();
        var error = Assert.Throws<LogFullException>(() =>
        {
            for (long k = 0; k < (4L << pageSizeBits) / 24; k++)
            {
                session.Upsert(k, k);
            }
        });

        Assert.Contains($"no record may lie at or above {limit}", error.Message, StringComparison.Ordinal);
        Assert.True(store.TailAddress <= limit);
        Assert.Equal((Status.Ok, 1L), session.ReadNow(1));
    }
}
