using HybridKV.Server.Tests.Support;

namespace HybridKV.Server.Tests;

/// <summary>CPR over the wire in process: HKV.COMMIT, the durable mode, and commits shared by connections.</summary>
[Trait("Category", "Server")]
public sealed class DurabilityTests
{
    [Fact]
    public async Task Commit_replies_with_the_serial_number_of_the_last_write_once_durable()
    {
        await using InProcessServer server = await InProcessServer.StartAsync(
            configureStore: store => store.CheckpointInterval = store.IndexCheckpointInterval = TimeSpan.FromHours(1));
        await using RespClient client = await RespClient.ConnectAsync(server.Port);
        Assert.Equal(0L, await client.CallAsync("HKV.COMMIT"));
        Assert.Equal("OK", await client.CallAsync("SET", "a", "1"));
        Assert.Equal(5L, await client.CallAsync("INCRBY", "b", "5"));
        Assert.Equal("1", await client.CallAsync("GET", "a"));
        Assert.Equal(1L, await client.CallAsync("DEL", "a"));
        long checkpointsBefore = server.Commits.CheckpointCount;

        // SET, INCRBY, GET, and DEL (an existence check, then the delete): the delete is serial number 5.
        Assert.Equal(5L, await client.CallAsync("HKV.COMMIT"));
        // Counted as it starts; the scheduler records its end (LastCommit) only after the store has told the session,
        // so that is not asserted here.
        Assert.True(server.Commits.CheckpointCount > checkpointsBefore);

        // Nothing written since: no new checkpoint is needed.
        long checkpoints = server.Commits.CheckpointCount;
        Assert.Equal(5L, await client.CallAsync("HKV.COMMIT"));
        Assert.Equal(checkpoints, server.Commits.CheckpointCount);
        Assert.Equal("OK", await client.CallAsync("SAVE"));
        Assert.IsType<long>(await client.CallAsync("LASTSAVE"));
    }

    [Fact]
    public async Task In_durable_mode_replies_wait_for_a_checkpoint_that_connections_share()
    {
        // The scheduler holds a requested checkpoint for up to this long, so that the connections' requests meet.
        await using InProcessServer server = await InProcessServer.StartAsync(configureStore: store =>
        {
            store.CheckpointInterval = store.IndexCheckpointInterval = TimeSpan.FromHours(1);
            store.CommitDelay = TimeSpan.FromSeconds(1);
        });
        const int connections = 12;
        var clients = new RespClient[connections];
        for (int i = 0; i < connections; i++)
        {
            clients[i] = await RespClient.ConnectAsync(server.Port);
            Assert.Equal("OK", await clients[i].CallAsync("HKV.DURABLE", "ON"));
            Assert.Equal(1L, await clients[i].CallAsync("HKV.DURABLE"));
        }

        long before = server.Commits.CheckpointCount;
        await Task.WhenAll(clients.Select(async (client, i) =>
        {
            Assert.Equal("OK", await client.CallAsync("SET", $"durable:{i}", "v"));
            // Acknowledged only once durable: the commit that follows has nothing left to wait for.
            Assert.Equal(1L, await client.CallAsync("HKV.COMMIT"));
        }));

        long checkpoints = server.Commits.CheckpointCount - before;
        Assert.InRange(checkpoints, 1, connections - 1);
        foreach (RespClient client in clients)
        {
            await client.DisposeAsync();
        }
    }

    [Fact]
    public async Task A_session_cannot_be_continued_twice_at_once()
    {
        await using InProcessServer server = await InProcessServer.StartAsync();
        await using RespClient first = await RespClient.ConnectAsync(server.Port);
        await using RespClient second = await RespClient.ConnectAsync(server.Port);
        string id = Assert.IsType<string>(await first.CallAsync("HKV.SESSION"));
        Assert.Equal(new RespError("ERR that session is open on another connection"), await second.CallAsync("HKV.CONTINUE", id));
        Assert.Equal(new RespError("ERR invalid session id: expected a GUID, as HKV.SESSION returns"),
            await second.CallAsync("HKV.CONTINUE", "nope"));
        Assert.Equal("PONG", await second.CallAsync("PING"));
    }
}
