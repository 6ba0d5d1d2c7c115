using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;
using HybridKV.Tests.VarLen;

namespace HybridKV.Tests.PendingOrder;

/// <summary>The lost delete of issue 24: a pending delete that read a stale tombstone from the device.</summary>
[Trait("Category", "PendingOrder")]
public sealed class LostDeleteTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_pending_delete_after_a_pending_RMW_of_a_deleted_cold_key_deletes_what_the_RMW_created()
    {
        string directory = _directory.NewSubdirectory();
        var settings = StoreOnDevice.Settings(directory);
        const long Key = 7;
        using (var store = StoreOnDevice.Create(settings))
        using (var session = store.NewSession())
        {
            session.Upsert(Key, 100);
            Assert.Equal(Status.Ok, session.Delete(Key));
            session.Preload(20_000, factor: 0, first: 1_000);

            var rmw = new CountContext();
            var delete = new CountContext();
            Assert.Equal(Status.Pending, session.RMW(Key, 5, rmw));
            Assert.Equal(Status.Pending, session.Delete(Key, delete));
            Assert.True(session.CompletePending(wait: true));

            Assert.Equal(Status.Ok, rmw.LastStatus);
            Assert.Equal(Status.Ok, delete.LastStatus);
            Assert.Equal(Status.NotFound, session.ReadNow(Key).Status);
            await store.TakeCheckpointAsync();
        }

        using (var recovered = StoreOnDevice.Create(settings))
        {
            await recovered.RecoverAsync();
            using var session = recovered.NewSession();
            Assert.Equal(Status.NotFound, session.ReadNow(Key).Status);
        }
    }

    [Fact]
    public async Task A_pending_delete_after_a_pending_append_of_a_deleted_cold_byte_key_deletes_what_the_append_created()
    {
        string directory = _directory.NewSubdirectory();
        StoreSettings settings = ByteStores.OnDevice(directory);
        byte[] key = "user:7"u8.ToArray();
        using (var store = ByteStores.Create(settings))
        using (var session = store.NewSession())
        {
            session.Upsert(key, ByteStores.Bytes(100, 1));
            Assert.Equal(Status.Ok, session.Delete(key));
            for (int i = 0; i < 400; i++)
            {
                session.Upsert($"filler:{i}", ByteStores.Bytes(300, i));
            }

            Assert.Equal(Status.Pending, session.RMW(key, "appended"u8));
            Assert.Equal(Status.Pending, session.Delete(key));
            Assert.True(session.CompletePending(wait: true));
            Assert.Null(session.ReadBytes(key));
            await store.TakeCheckpointAsync();
        }

        using (var recovered = ByteStores.Create(settings))
        {
            await recovered.RecoverAsync();
            using var session = recovered.NewSession();
            Assert.Null(session.ReadBytes(key));
        }
    }

    [Fact]
    public async Task Two_sessions_that_each_update_then_delete_the_same_cold_keys_leave_them_deleted()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var first = store.NewSession();
        using var second = store.NewSession();
        const int Keys = 200;
        for (long k = 0; k < Keys; k++)
        {
            first.Upsert(k, 100);
            if (k % 2 == 0)
            {
                first.Delete(k);
            }
        }

        first.Preload(20_000, factor: 0, first: 1_000);

        // Each session's own order puts its delete last, so whatever the interleaving, a delete is the last operation.
        for (long k = 0; k < Keys; k++)
        {
            first.RMW(k, 5, null);
            second.RMW(k, 7, null);
            first.Delete(k, null);
            second.Delete(k, null);
        }

        bool[] done = await Task.WhenAll(Task.Run(() => first.CompletePending(wait: true)),
            Task.Run(() => second.CompletePending(wait: true))).WaitAsync(TimeSpan.FromMinutes(1));
        Assert.All(done, Assert.True);
        var survivors = Enumerable.Range(0, Keys).Where(k => first.ReadNow(k).Status != Status.NotFound).ToArray();
        Assert.Empty(survivors);
    }
}
