using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>Every setting the validator accepts works (issue 16, item 6).</summary>
[Trait("Category", "Hardening")]
public sealed class SettingsThatWorkTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Theory]
    [InlineData(1.0)]
    [InlineData(0.99)]
    public async Task A_store_on_a_device_with_every_page_mutable_keeps_writing_past_its_memory(double mutableFraction)
    {
        StoreSettings settings = StoreOnDevice.Settings(_directory.NewSubdirectory()) with { MutableFraction = mutableFraction };
        using var store = StoreOnDevice.Create(settings);
        using var session = store.NewSession();

        // Ten times the memory: pages must leave memory, so some must become read-only and be flushed.
        await Task.Run(() => session.Preload(30_000, factor: 2)).WaitAsync(TimeSpan.FromMinutes(1));

        Assert.True(store.HeadAddress > StoreOnDevice.MemoryBytes, "nothing was evicted");
        Assert.Equal((Status.Ok, 2L), session.ReadNow(1));
        Assert.Equal((Status.Ok, 59_998L), session.ReadNow(29_999));
    }
}
