using HybridKV.Log;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Log;

/// <summary>
/// The reader compaction and scans use: a page read ahead is what a later read of that page returns, and one nobody
/// asks for is neither returned for another page nor left writing into memory the reader frees.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class LogReaderTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Pages_read_ahead_or_not_hold_the_same_records_and_an_unwanted_read_ahead_is_dropped()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()) with
        {
            LogCompactionRatio = 0,
        });
        using (var session = store.NewSession())
        {
            for (long k = 0; store.HeadAddress < 8 * StoreOnDevice.PageSize; k++)
            {
                session.Upsert(k, k * 3);
            }
        }

        long page = StoreOnDevice.PageSize;
        using var plain = NewReader(store);
        using var ahead = NewReader(store);

        // Asked for page 2 while page 3 was read ahead; then page 3 as read ahead; then page 5, read ahead, abandoned.
        ahead.ReadAhead(3 * page, 4 * page, CancellationToken.None);
        Assert.Equal(await KeysOf(plain, 2 * page), await KeysOf(ahead, 2 * page));
        ahead.ReadAhead(3 * page, 4 * page, CancellationToken.None);
        Assert.Equal(await KeysOf(plain, 3 * page), await KeysOf(ahead, 3 * page));
        ahead.ReadAhead(5 * page, 6 * page, CancellationToken.None);
    }

    private static LogReader<long, long> NewReader(
        HybridKVStore<long, long, long, long, CountContext?, CountFunctions> store) =>
        new(store.Engine.Log, store.Engine.Epoch, store.Engine.LogCompactionEntry, TimeProvider.System);

    private static async Task<List<long>> KeysOf(LogReader<long, long> reader, long page)
    {
        Assert.True(await reader.ReadPageAsync(page, page + StoreOnDevice.PageSize, CancellationToken.None),
            "the page was read from the device");
        var keys = new List<long>();
        long next = page;
        while (reader.NextRecord(ref next, page + StoreOnDevice.PageSize, out long address, out _))
        {
            keys.Add(reader.KeyAt(address));
        }

        Assert.NotEmpty(keys);
        return keys;
    }
}
