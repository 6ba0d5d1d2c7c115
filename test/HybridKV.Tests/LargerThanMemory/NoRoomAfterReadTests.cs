using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.LargerThanMemory;

/// <summary>
/// A pending RMW whose record was read from the device, but which then finds no room at the tail, waits with the record
/// it read: it does not read it again on every retry. Reading it again starved the flushes that would make room (both
/// go through the device's I/O threads), and a larger-than-memory store with periodic checkpoints stalled for seconds
/// at a time, reading at full speed and completing nothing (issue 26's larger-than-memory runs).
/// </summary>
[Trait("Category", "LargerThanMemory")]
public sealed class NoRoomAfterReadTests
{
    [Fact]
    public async Task A_pending_RMW_waiting_for_log_space_reads_its_record_from_the_device_once()
    {
        using var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 24));
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with { MemoryCompactionMaxLiveFraction = 0 });
        using var session = store.NewSession();
        session.Preload();
        session.CompletePending(wait: true);

        // Writes are held, so the flush of the next read-only page never completes and the log's memory fills.
        var release = new TaskCompletionSource();
        device.HoldWrites = release.Task;
        Task? filler = null;
        var context = new CountContext();
        try
        {
            filler = Task.Factory.StartNew(() =>
            {
                using var writer = store.NewSession();
                writer.Preload(count: 20_000, first: 1_000_000);
            }, TaskCreationOptions.LongRunning);
            using (var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(1)))
            {
                while (store.Engine.Log.PageTurnsRefused == 0)
                {
                    Assert.False(filler.IsCompleted, "The filler finished without filling the log.");
                    await Task.Delay(1, timeout.Token);
                }
            }

            long readsBefore = device.ReadCount;
            Assert.Equal(Status.Pending, session.RMW(0, 1, context));
            using (var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(1)))
            {
                for (int pass = 0; pass < 200 && device.ReadCount <= readsBefore + 1; pass++)
                {
                    Assert.False(session.CompletePending(wait: false));
                    await Task.Delay(1, timeout.Token);
                }
            }

            Assert.Equal(readsBefore + 1, device.ReadCount);
            Assert.Equal(0, context.Completions);
        }
        finally
        {
            // Released whatever the assertions found: a store waits for its writes when it is disposed.
            release.TrySetResult();
        }

        Assert.True(session.CompletePending(wait: true));
        await filler!;
        Assert.Equal(Status.Ok, context.LastStatus);
        Assert.Equal((Status.Ok, 1L), session.ReadNow(0));
    }
}
