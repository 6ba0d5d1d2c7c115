using HybridKV.Devices;
using HybridKV.Sessions;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.PendingOrder;

using CountSession = Session<long, long, long, long, CountContext?, CountFunctions>;

/// <summary>
/// A session's reads of one cold key run together and share one device read, where they once waited for each other,
/// each reading the same record again; an update behind them still waits for all of them, and the reads behind that
/// update see it.
/// </summary>
[Trait("Category", "PendingOrder")]
public sealed class ReadsTogetherTests
{
    private const long Key = 5;
    private const int Reads = 4;

    [Fact]
    public void Reads_of_one_key_share_a_device_read_and_an_update_behind_them_waits_for_all()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device));
        using var session = store.NewSession();
        session.Preload();
        var before = Contexts(Reads);
        var update = new CountContext();
        var after = Contexts(2);
        var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        device.HoldReads = held.Task;
        long readsAtStart = device.ReadCount;
        long readsWhileHeld;
        try
        {
            foreach (CountContext read in before)
            {
                Assert.Equal(Status.Pending, Read(session, read));
            }

            Assert.Equal(Status.Pending, session.RMW(Key, 100, update));
            foreach (CountContext read in after)
            {
                Assert.Equal(Status.Pending, Read(session, read));
            }

            readsWhileHeld = device.ReadCount - readsAtStart;
        }
        finally
        {
            // Released whatever happened: the store cannot close while a read waits for the device.
            device.HoldReads = null;
            held.SetResult();
            session.CompletePending(wait: true);
        }

        // One device read for the four reads, then the update's own (after them); the reads behind the update found
        // its record in memory. One at a time, each read read the record again: five in all.
        Assert.Equal((1L, 2L), (readsWhileHeld, device.ReadCount - readsAtStart));
        Assert.All(before, read => Assert.Equal((Status.Ok, Key), (read.LastStatus, read.Output)));
        Assert.Equal(Status.Ok, update.LastStatus);
        Assert.All(after, read => Assert.Equal((Status.Ok, Key + 100), (read.LastStatus, read.Output)));
        Assert.Equal((Status.Ok, Key + 100), session.ReadNow(Key));
    }

    private static CountContext[] Contexts(int count) => Enumerable.Range(0, count).Select(_ => new CountContext()).ToArray();

    private static Status Read(CountSession session, CountContext context)
    {
        long output = 0;
        return session.Read(Key, 0, ref output, context);
    }
}
