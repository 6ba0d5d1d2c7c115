using FsCheck;
using FsCheck.Fluent;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Operations;

/// <summary>
/// Batched reads (issue 19) return exactly what one read at a time returns: values from the mutable and read-only
/// regions, keys never written or deleted, and records on the device (pending, finished by CompletePending), for any
/// batch length across the prefetch groups.
/// </summary>
[Trait("Category", "Operations")]
public sealed class ReadBatchTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void A_batch_reads_what_single_reads_read_in_memory_on_the_device_and_for_absent_keys()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(6_000, factor: 7);
        for (long k = 0; k < 6_000; k += 10)
        {
            session.Delete(k);
        }

        Gen<long[]> batches = Gen.Choose(0, 8_000).Select(k => (long)k).ArrayOf().Select(a => a.Take(70).ToArray());
        Prop.ForAll(Arb.From(batches), keys =>
        {
            var outputs = new long[keys.Length];
            var statuses = new Status[keys.Length];
            session.Read(keys, outputs, statuses);
            Assert.True(session.CompletePending(wait: true));
            for (int i = 0; i < keys.Length; i++)
            {
                long k = keys[i];
                (Status expected, long value) = k < 6_000 && k % 10 != 0 ? (Status.Ok, k * 7) : (Status.NotFound, 0L);
                if (statuses[i] == Status.Pending)
                {
                    // Finished by CompletePending: read the key again, now that nothing of this session is pending.
                    Assert.Equal(expected == Status.Ok ? (Status.Ok, value) : (Status.NotFound, 0L), session.ReadOrZeroNow(k));
                    continue;
                }

                Assert.Equal(expected, statuses[i]);
                if (expected == Status.Ok)
                {
                    Assert.Equal(value, outputs[i]);
                }
            }

            return true;
        }).QuickCheckThrowOnFailure();
    }

    [Fact]
    public void A_batch_reports_records_on_the_device_to_the_completion_callback_as_a_single_read_does()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        session.Preload(6_000, factor: 3);
        long[] keys = [0, 1, 2, 5_999, 5_998, 7_000];
        var outputs = new long[keys.Length];
        var statuses = new Status[keys.Length];
        session.Read(keys, outputs, statuses);
        Assert.Equal([Status.Pending, Status.Pending, Status.Pending, Status.Ok, Status.Ok, Status.NotFound], statuses);
        Assert.Equal([5_999 * 3L, 5_998 * 3L], outputs[3..5]);
        Assert.True(session.CompletePending(wait: true));
    }

    [Fact]
    public void Outputs_or_statuses_shorter_than_the_keys_are_refused_naming_which()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        var error = Assert.Throws<ArgumentException>(() => session.Read(new long[3], new long[3], new Status[2]));
        Assert.Equal("statuses", error.ParamName);
        error = Assert.Throws<ArgumentException>(() => session.Read(new long[3], new long[2], new Status[3]));
        Assert.Equal("outputs", error.ParamName);
    }
}
