using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// The tail never goes backwards (issue 16, item 2), also when a page turn fails because no frame is free yet: a
/// fold-over that read the tail as its final address must find the log reaching it.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class TailTests
{
    private static readonly TimeSpan Guard = TimeSpan.FromMinutes(1);

    [Fact]
    public async Task The_tail_never_goes_backwards_while_page_turns_wait_for_a_slow_device_and_a_fold_over_completes()
    {
        // 24-byte records do not fill a 4 KiB page exactly, so a turn that fails had reserved past a record boundary.
        var device = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16)) { Latency = TimeSpan.FromMilliseconds(2) };
        using var checkpoints = new MemoryCheckpointStore();
        using (device)
        using (var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with { CheckpointStore = checkpoints }))
        using (var session = store.NewSession())
        {
            using var stop = new CancellationTokenSource();
            long decreases = 0;
            (long Before, long After) first = default;
            long advances = 0;
            Task sampler = Task.Run(() =>
            {
                long last = store.TailAddress;
                while (!stop.IsCancellationRequested)
                {
                    long tail = store.TailAddress;
                    if (tail < last && decreases++ == 0)
                    {
                        first = (last, tail);
                    }

                    if (tail > last)
                    {
                        advances++;
                    }

                    last = Math.Max(last, tail);
                }
            });

            await Task.Run(() => session.Preload(30_000)).WaitAsync(Guard);
            await stop.CancelAsync();
            await sampler.WaitAsync(Guard);

            Assert.True(advances > 0, "the sampler never saw the tail move while the writer ran");
            Assert.True(decreases == 0, $"the tail went back {decreases} times, first from {first.Before} to {first.After}");

            // The writers have stopped: a fold-over of everything up to the tail completes.
            device.Latency = TimeSpan.Zero;
            await store.TakeCheckpointAsync(CheckpointKind.LogOnly, CheckpointMode.FoldOver).WaitAsync(Guard);
            Assert.True(store.FlushedUntilAddress >= store.TailAddress, "the fold-over did not reach the tail");
        }
    }
}
