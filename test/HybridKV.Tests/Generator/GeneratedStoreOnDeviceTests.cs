using HybridKV.Checkpoints;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Generator;

/// <summary>
/// A store generated inside this test project (the generator runs on it as an analyzer), exercised where the
/// callbacks matter most: reads and RMWs that go to the device and finish in completion callbacks, and a checkpoint
/// recovered through the generated <c>ContinueSession</c>.
/// </summary>
[Trait("Category", "Generator")]
public sealed class GeneratedStoreOnDeviceTests
{
    [Fact]
    public async Task The_generated_store_compacts_scans_and_grows_its_index_itself()
    {
        using var temp = new TempDirectory();
        using var store = new DeviceCounts.Store(StoreOnDevice.Settings(temp.NewSubdirectory()));
        using (DeviceCounts.Session session = store.NewSession())
        {
            for (int round = 0; round < 3; round++)
            {
                for (long key = 0; key < 5_000; key++)
                {
                    session.Upsert(key, (key * 10) + round);
                }
            }
        }

        CompactionResult compacted = await store.CompactAsync(store.HeadAddress);
        Assert.True(compacted.RecordsExamined > compacted.RecordsCopied, "superseded records were dropped");
        Assert.Equal(compacted.UntilAddress, store.BeginAddress);

        var live = new Dictionary<long, long>();
        await foreach (ScanRecord<long, long> record in store.ScanLiveAsync())
        {
            live.Add(record.Key, record.Value);
        }

        Assert.Equal(5_000, live.Count);
        Assert.All(live, pair => Assert.Equal((pair.Key * 10) + 2, pair.Value));

        long scanned = 0;
        await foreach (ScanRecord<long, long> record in store.ScanAsync(store.BeginAddress, store.TailAddress))
        {
            scanned++;
        }

        Assert.True(scanned >= 5_000, $"{scanned} records scanned");
        Assert.Equal(scanned, store.Scan(store.BeginAddress, store.TailAddress).LongCount());
        Assert.Equal(5_000, store.ScanLive().Count());
        long buckets = store.IndexBucketCount;
        Assert.True(await store.GrowIndexAsync());
        Assert.Equal(2 * buckets, store.IndexBucketCount);
        long tail = store.TailAddress;
        await store.ShiftBeginAddressAsync(store.BeginAddress);
        Assert.Equal(tail, store.TailAddress);
    }

    [Fact]
    public async Task Pending_operations_finish_in_the_class_completion_callbacks_and_survive_recovery()
    {
        using var temp = new TempDirectory();
        StoreSettings settings = StoreOnDevice.Settings(temp.NewSubdirectory()) with
        {
            CheckpointDirectory = temp.NewSubdirectory(),
        };
        var id = Guid.NewGuid();
        long lastSerialNo;
        using (var store = new DeviceCounts.Store(settings))
        using (DeviceCounts.Session session = store.NewSession(id))
        {
            for (long key = 0; key < 20_000; key++)
            {
                session.Upsert(key, key * 3);
            }

            Assert.True(store.HeadAddress > 0, "The preload should have pushed the first records to the device.");
            var read = new Completion();
            long output = -1;
            Assert.Equal(Status.Pending, session.Read(7, 0, ref output, read));
            Assert.True(session.CompletePending(wait: true));
            Assert.Equal((1, Status.Ok, 21L), (read.Calls, read.Status, read.Output));

            var update = new Completion();
            Assert.Equal(Status.Pending, session.RMW(8, 100, update));
            Assert.True(session.CompletePending(wait: true));
            Assert.Equal((1, Status.Ok), (update.Calls, update.Status));

            ReadResult<long> awaited = await session.ReadAsync(8, context: new Completion());
            Assert.Equal(new ReadResult<long>(Status.Ok, 124), awaited);

            await store.TakeCheckpointAsync(CheckpointKind.Full, CheckpointMode.Snapshot);
            lastSerialNo = session.LastSerialNo;
        }

        using var recovered = new DeviceCounts.Store(settings);
        RecoveryResult? result = await recovered.RecoverAsync();
        Assert.NotNull(result);
        using DeviceCounts.Session continued = recovered.ContinueSession(id, out CommitPoint point);
        Assert.Equal(lastSerialNo, point.UntilSerialNo);
        Assert.Equal(new ReadResult<long>(Status.Ok, 124), await continued.ReadAsync(8, context: new Completion()));
        Assert.Equal(new ReadResult<long>(Status.Ok, 19_999 * 3),
            await continued.ReadAsync(19_999, context: new Completion()));
    }
}

/// <summary>A count store whose context records how a pending operation ended.</summary>
[GeneratedStore(Key = typeof(long), Value = typeof(long), Context = typeof(Completion))]
internal static partial class DeviceCounts
{
    private static void InPlaceUpdater(in long key, in long input, ref long value) => Interlocked.Add(ref value, input);

    private static void ReadCompletionCallback(in long key, in long input, in long output, Completion context,
        Status status) => context.Record(status, output);

    private static void RMWCompletionCallback(in long key, in long input, Completion context, Status status) =>
        context.Record(status, 0);
}

/// <summary>What a completion callback reported.</summary>
internal sealed class Completion
{
    public int Calls { get; private set; }

    public Status Status { get; private set; }

    public long Output { get; private set; }

    public void Record(Status status, long output)
    {
        Calls++;
        Status = status;
        Output = output;
    }
}
