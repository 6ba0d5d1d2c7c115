using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using Session = HybridKV.Sessions.Session<long, long, long, long, HybridKV.Tests.Support.CountContext?, HybridKV.Tests.Support.CountFunctions>;
using Store = HybridKV.HybridKVStore<long, long, long, long, HybridKV.Tests.Support.CountContext?, HybridKV.Tests.Support.CountFunctions>;

namespace HybridKV.Tests.Lifecycle;

/// <summary>
/// Scans of the log (issue 18): every record of a range in address order, or each key's live record once, across
/// memory and the device, with what concurrent updates and compaction may and may not change.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class ScanTests : IDisposable
{
    private const int Keys = 3_000;
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    private Store NewStore() =>
        StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()) with { LogCompactionRatio = 0 });

    /// <summary>Three rounds over every key, then every fifth key deleted: a log several times memory, its older
    /// rounds on the device.</summary>
    private static Dictionary<long, long> Load(Session session) => Churn.Run(session, Keys, rounds: 3, deleteEvery: 5);

    [Fact]
    public async Task A_range_scan_returns_every_record_in_address_order_from_the_device_and_from_memory()
    {
        using Store store = NewStore();
        using Session session = store.NewSession();
        Dictionary<long, long> model = Load(session);
        long head = store.HeadAddress;

        var last = new Dictionary<long, ScanRecord<long, long>>();
        long previous = -1;
        int onDevice = 0, inMemory = 0, deleted = 0;
        await foreach (ScanRecord<long, long> record in store.ScanAsync(0, long.MaxValue))
        {
            Assert.True(record.Address > previous, $"address {record.Address} after {previous}");
            previous = record.Address;
            _ = record.Address < head ? onDevice++ : inMemory++;
            deleted += record.IsDeleted ? 1 : 0;
            last[record.Key] = record;
        }

        Assert.True(onDevice > Keys && inMemory > 0, $"{onDevice} records from the device, {inMemory} from memory");
        Assert.Equal(Keys / 5, deleted);
        Assert.Equal(Keys, last.Count);
        foreach ((long key, ScanRecord<long, long> record) in last)
        {
            Assert.Equal(!model.ContainsKey(key), record.IsDeleted);
            if (model.TryGetValue(key, out long value))
            {
                Assert.Equal(value, record.Value);
            }
        }
    }

    [Fact]
    public void A_live_scan_returns_each_live_key_once_with_its_value_and_no_deleted_key()
    {
        using Store store = NewStore();
        using Session session = store.NewSession();
        Dictionary<long, long> model = Load(session);

        var seen = new Dictionary<long, long>();
        foreach (ScanRecord<long, long> record in store.ScanLive())
        {
            Assert.False(record.IsDeleted);
            Assert.True(seen.TryAdd(record.Key, record.Value), $"key {record.Key} returned twice");
        }

        Assert.Equal(model.OrderBy(p => p.Key), seen.OrderBy(p => p.Key));
    }

    [Fact]
    public async Task A_live_scan_returns_each_key_present_when_it_began_once_while_every_key_is_updated_meanwhile()
    {
        using Store store = NewStore();
        using Session session = store.NewSession();
        Dictionary<long, long> before = Load(session);

        var seen = new Dictionary<long, long>();
        await using IAsyncEnumerator<ScanRecord<long, long>> scan = store.ScanLiveAsync().GetAsyncEnumerator();
        Assert.True(await scan.MoveNextAsync());
        seen.Add(scan.Current.Key, scan.Current.Value);

        // After the scan began: every key gets a new value, and new keys appear.
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal(Status.Ok, session.Upsert(k, 7_000_000 + k));
        }

        for (long k = Keys; k < Keys + 500; k++)
        {
            Assert.Equal(Status.Ok, session.Upsert(k, k));
        }

        while (await scan.MoveNextAsync())
        {
            Assert.True(seen.TryAdd(scan.Current.Key, scan.Current.Value), $"key {scan.Current.Key} returned twice");
        }

        Assert.Equal(before.Keys.Order(), seen.Keys.Order());
        Assert.All(seen, pair => Assert.True(pair.Value == before[pair.Key] || pair.Value == 7_000_000 + pair.Key,
            $"key {pair.Key} read {pair.Value}, neither its value before the scan nor after"));
    }

    [Fact]
    public async Task Compaction_during_a_scan_drops_nothing_the_scan_has_not_read_yet()
    {
        using Store store = NewStore();
        using Session session = store.NewSession();
        Dictionary<long, long> model = Load(session);

        var seen = new Dictionary<long, long>();
        long firstAddress;
        await using (IAsyncEnumerator<ScanRecord<long, long>> scan = store.ScanLiveAsync().GetAsyncEnumerator())
        {
            Assert.True(await scan.MoveNextAsync());
            firstAddress = scan.Current.Address;
            seen.Add(scan.Current.Key, scan.Current.Value);

            CompactionResult compacted = await store.CompactAsync(store.HeadAddress);
            Assert.True(compacted.UntilAddress <= firstAddress,
                $"compaction moved the begin address to {compacted.UntilAddress}, past the scan at {firstAddress}");
            Assert.True(compacted.RecordsCopied > 0, "compaction copied nothing");

            while (await scan.MoveNextAsync())
            {
                Assert.True(seen.TryAdd(scan.Current.Key, scan.Current.Value), $"key {scan.Current.Key} returned twice");
            }
        }

        Assert.Equal(model.OrderBy(p => p.Key), seen.OrderBy(p => p.Key));

        // Once the scan is gone, compaction goes all the way.
        long head = store.HeadAddress;
        CompactionResult after = await store.CompactAsync(head);
        Assert.Equal(head & ~(StoreOnDevice.PageSize - 1), after.UntilAddress);
    }

    [Fact]
    public async Task A_scan_stops_when_cancelled_and_releases_its_epoch_row()
    {
        using Store store = NewStore();
        using Session session = store.NewSession();
        Load(session);
        using var cancel = new CancellationTokenSource();
        int read = 0;
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () =>
        {
            await foreach (ScanRecord<long, long> _ in store.ScanAsync(0, long.MaxValue, cancel.Token))
            {
                if (++read == 100)
                {
                    await cancel.CancelAsync();
                }
            }
        });

        Assert.Equal(100, read);
        // Every row but the session's and the store's own is free again: as many sessions open as the setting allows.
        var more = new List<Session>();
        for (int i = 1; i < store.Settings.MaxSessions; i++)
        {
            more.Add(store.NewSession());
        }

        more.ForEach(s => s.Dispose());
    }

    [Fact]
    public async Task A_scan_over_a_deleted_segment_file_fails_naming_it()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = StoreOnDevice.Settings(directory);
        using (Store store = StoreOnDevice.Create(settings))
        using (Session session = store.NewSession())
        {
            Load(session);
            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.FoldOver);
        }

        File.Delete(Path.Combine(directory, "log", "hlog.1"));
        using Store reopened = StoreOnDevice.Create(settings);
        await reopened.RecoverAsync();
        var error = await Assert.ThrowsAsync<CorruptLogException>(async () =>
        {
            await foreach (ScanRecord<long, long> _ in reopened.ScanAsync(0, long.MaxValue))
            {
            }
        });
        Assert.Contains("hlog.1", error.Message, StringComparison.Ordinal);
    }
}
