using HybridKV.Devices;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// An update held behind a pending read of its key (one order per session) still takes effect when that read fails on
/// the device: the read's failure is its own, not its key's.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class HeldAfterFailedReadTests
{
    [Theory]
    [InlineData("upsert")]
    [InlineData("rmw")]
    [InlineData("delete")]
    public void An_update_held_behind_a_read_that_fails_on_the_device_still_takes_effect(string update)
    {
        var faulty = new FaultInjectingDevice(new MemoryDevice(512, 1L << 16));
        using (faulty)
        {
            using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: faulty));
            using var session = store.NewSession();
            session.Preload();
            const long Key = 5;

            int failures = 0;
            faulty.FailRead = _ => Interlocked.Increment(ref failures) == 1;
            var read = new CountContext();
            long output = 0;
            Assert.Equal(Status.Pending, session.Read(Key, 0, ref output, read));
            var updated = new CountContext();
            Status issued = update switch
            {
                "upsert" => session.Upsert(Key, 890),
                "rmw" => session.RMW(Key, 100, updated),
                _ => session.Delete(Key, updated),
            };
            Assert.Equal(Status.Pending, issued);
            session.CompletePending(wait: true);
            Assert.Equal(Status.Error, read.LastStatus);
            faulty.FailRead = null;

            (Status status, long value) = session.ReadNow(Key);
            switch (update)
            {
                case "upsert":
                    Assert.Equal((Status.Ok, 890L), (status, value));
                    break;
                case "rmw":
                    Assert.Equal(Status.Ok, updated.LastStatus);
                    Assert.Equal((Status.Ok, Key + 100), (status, value));
                    break;
                default:
                    Assert.Equal(Status.NotFound, status);
                    break;
            }
        }
    }
}
