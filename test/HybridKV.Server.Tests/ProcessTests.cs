using System.Collections.Concurrent;
using HybridKV.Server.Tests.Support;
using StackExchange.Redis;

namespace HybridKV.Server.Tests;

/// <summary>
/// The server as a separate process, as <c>dotnet run --project src/HybridKV.Server</c> starts it: used by
/// StackExchange.Redis, stopped as by Ctrl+C (SIGTERM takes the host's same shutdown), killed with SIGKILL during durable writes, restarted.
/// </summary>
[Trait("Category", "Server")]
public sealed class ProcessTests
{
    // No periodic checkpoint during a test: what is durable is exactly what a commit made durable.
    private static readonly string[] NoPeriodicCheckpoints = ["--checkpoint-interval", "01:00:00", "--HybridKV:IndexCheckpointInterval", "01:00:00"];

    [Fact]
    public async Task A_server_process_serves_stackexchange_redis_and_checkpoints_when_stopped()
    {
        using var directory = new TempDirectory();
        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, NoPeriodicCheckpoints))
        {
            await using ConnectionMultiplexer redis = await StackExchangeRedisTests.ConnectAsync($"127.0.0.1:{server.Port}");
            IDatabase db = redis.GetDatabase();
            await Task.WhenAll(Enumerable.Range(0, 500).Select(i => db.StringSetAsync($"p:{i}", i)));
            Assert.Equal(500, await db.StringIncrementAsync("p:counter", 500));
            Assert.Equal(0, await server.TerminateAsync());
            Assert.Contains("stopped: every operation is durable", server.Output, StringComparison.Ordinal);
        }

        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, NoPeriodicCheckpoints))
        {
            await using ConnectionMultiplexer redis = await StackExchangeRedisTests.ConnectAsync($"127.0.0.1:{server.Port}");
            IDatabase db = redis.GetDatabase();
            RedisValue[] values = await db.StringGetAsync(Enumerable.Range(0, 500).Select(i => (RedisKey)$"p:{i}").ToArray());
            Assert.Equal(Enumerable.Range(0, 500).Select(i => (RedisValue)i), values);
            Assert.Equal(501, await db.StringIncrementAsync("p:counter"));
            Assert.Contains("Recovered HybridKV store", server.Output, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Every_acknowledged_durable_write_survives_sigkill()
    {
        using var directory = new TempDirectory();
        var acknowledged = new ConcurrentDictionary<string, string>();
        var enough = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, ["--durable", "true", .. NoPeriodicCheckpoints]))
        {
            Task[] writers = Enumerable.Range(0, 6).Select(w => Task.Run(async () =>
            {
                await using RespClient client = await RespClient.ConnectAsync(server.Port);
                try
                {
                    for (int i = 0; ; i++)
                    {
                        string key = $"w{w}:{i}";
                        string value = $"value-{w}-{i}";
                        // Pipelined: a SET and an INCR in one write, acknowledged together once durable.
                        await client.SendAsync([.. RespClient.Encode("SET", key, value), .. RespClient.Encode("INCR", $"w{w}:count")]);
                        Assert.Equal("OK", await client.ReadAsync());
                        Assert.Equal((long)(i + 1), await client.ReadAsync());
                        acknowledged[key] = value;
                        acknowledged[$"w{w}:count"] = (i + 1).ToString(System.Globalization.CultureInfo.InvariantCulture);
                        if (acknowledged.Count >= 400)
                        {
                            enough.TrySetResult();
                        }
                    }
                }
                catch (Exception error) when (error is IOException or EndOfStreamException or System.Net.Sockets.SocketException)
                {
                    // Killed: whatever was not acknowledged may or may not have survived.
                }
            })).ToArray();

            await enough.Task.WaitAsync(TimeSpan.FromSeconds(60));
            server.Kill();
            await Task.WhenAll(writers).WaitAsync(TimeSpan.FromSeconds(60));
        }

        var survived = new Dictionary<string, string>(acknowledged);
        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, NoPeriodicCheckpoints))
        {
            await using RespClient client = await RespClient.ConnectAsync(server.Port);
            foreach ((string key, string value) in survived)
            {
                object? stored = await client.CallAsync("GET", key);
                if (key.EndsWith(":count", StringComparison.Ordinal))
                {
                    // The counter was acknowledged at least this far (a later increment may have become durable too).
                    Assert.True(long.Parse((string)stored!, System.Globalization.CultureInfo.InvariantCulture) >=
                        long.Parse(value, System.Globalization.CultureInfo.InvariantCulture), $"{key}: {stored} < {value}");
                }
                else
                {
                    Assert.Equal(value, stored);
                }
            }
        }
    }

    [Fact]
    public async Task A_session_continued_after_a_crash_learns_its_commit_point()
    {
        using var directory = new TempDirectory();
        string id;
        long committed;
        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, NoPeriodicCheckpoints))
        {
            await using RespClient client = await RespClient.ConnectAsync(server.Port);
            id = Assert.IsType<string>(await client.CallAsync("HKV.SESSION"));
            for (int i = 1; i <= 5; i++)
            {
                Assert.Equal("OK", await client.CallAsync("SET", $"s:{i}", $"v{i}"));
            }

            committed = Assert.IsType<long>(await client.CallAsync("HKV.COMMIT"));
            Assert.Equal(5L, committed);

            // Acknowledged, not committed: lost in the crash, and after the commit point.
            Assert.Equal("OK", await client.CallAsync("SET", "s:6", "v6"));
            Assert.Equal("OK", await client.CallAsync("SET", "s:1", "overwritten"));
            server.Kill();
        }

        using (ServerProcess server = await ServerProcess.StartAsync(directory.Path, NoPeriodicCheckpoints))
        {
            await using RespClient client = await RespClient.ConnectAsync(server.Port);
            var point = Assert.IsType<object?[]>(await client.CallAsync("HKV.CONTINUE", id));
            Assert.Equal(committed, point[0]);
            Assert.Empty(Assert.IsType<object?[]>(point[1]));
            Assert.Equal(id, await client.CallAsync("HKV.SESSION"));
            Assert.Equal("v1", await client.CallAsync("GET", "s:1"));
            Assert.Equal("v5", await client.CallAsync("GET", "s:5"));
            Assert.Null(await client.CallAsync("GET", "s:6"));

            // The session goes on after its commit point: the client writes again what was lost, and commits it.
            Assert.Equal("OK", await client.CallAsync("SET", "s:6", "v6"));
            // Serial numbers continue after the commit point: the three GETs took 6 to 8, the SET 9.
            Assert.Equal(committed + 4, await client.CallAsync("HKV.COMMIT"));
        }
    }
}
