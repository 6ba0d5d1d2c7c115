using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Sessions;

[Trait("Category", "Checkpoint")]
public sealed class SessionIdentityTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public void A_session_takes_the_identity_it_is_given_and_two_open_sessions_cannot_share_one()
    {
        using var store = TestStores.Create(TestStores.Small());
        var id = Guid.NewGuid();
        using (var session = store.NewSession(id))
        {
            Assert.Equal(id, session.Id);
            var error = Assert.Throws<ArgumentException>(() => store.NewSession(id));
            Assert.Contains(id.ToString(), error.Message, StringComparison.Ordinal);
            Assert.Equal(1, store.OpenSessionCount);
        }

        // Once closed, the identity can continue in a new session.
        using var again = store.NewSession(id);
        Assert.Equal(id, again.Id);
        using var generated = store.NewSession();
        Assert.NotEqual(id, generated.Id);
    }

    [Fact]
    public async Task Every_operation_takes_the_next_serial_number_including_pending_and_async_ones()
    {
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(_directory.NewSubdirectory()));
        using var session = store.NewSession();
        Assert.Equal(0, session.LastSerialNo);
        Assert.Equal(1, session.NextSerialNo);

        session.Preload();

        Assert.Equal(20_000, session.LastSerialNo);
        long output = 0;
        Assert.Equal(Status.Pending, session.Read(1, ref output));
        Assert.Equal(Status.Pending, session.RMW(2, 1));
        Assert.Equal(Status.Ok, session.Delete(3)); // blind: it does not read the device
        Assert.Equal(20_003, session.LastSerialNo);
        session.CompletePending(wait: true);
        Assert.Equal(20_003, session.LastSerialNo);

        await session.ReadAsync(4);
        await session.RMWAsync(5, 1);
        await session.DeleteAsync(6);
        await session.UpsertAsync(7, 7);
        Assert.Equal(20_007, session.LastSerialNo);
    }

    [Fact]
    public void A_caller_may_move_serial_numbers_forward_but_never_back()
    {
        using var store = TestStores.Create(TestStores.Small());
        using var session = store.NewSession();
        session.NextSerialNo = 1_000;
        session.Upsert(1, 1);
        Assert.Equal(1_000, session.LastSerialNo);
        Assert.Equal(1_001, session.NextSerialNo);

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => session.NextSerialNo = 1_000);
        Assert.Contains("only increase", error.Message, StringComparison.Ordinal);
        Assert.Equal(1_001, session.NextSerialNo);
    }
}
