using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

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
}
