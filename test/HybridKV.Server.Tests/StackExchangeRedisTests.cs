using HybridKV.Server.Tests.Support;
using StackExchange.Redis;

namespace HybridKV.Server.Tests;

/// <summary>StackExchange.Redis, configured as for any Redis server, against the server in process.</summary>
[Trait("Category", "Server")]
public sealed class StackExchangeRedisTests : IClassFixture<ServerFixture>
{
    private readonly ServerFixture _fixture;

    public StackExchangeRedisTests(ServerFixture fixture) => _fixture = fixture;

    internal static Task<ConnectionMultiplexer> ConnectAsync(string endPoint, RedisProtocol protocol = RedisProtocol.Resp2)
    {
        var options = new ConfigurationOptions
        {
            EndPoints = { endPoint },
            AbortOnConnectFail = true,
            ConnectTimeout = 30_000,
            SyncTimeout = 30_000,
            AsyncTimeout = 30_000,
            Protocol = protocol,
        };
        return ConnectionMultiplexer.ConnectAsync(options);
    }

    [Fact]
    public async Task String_commands_behave_as_in_redis()
    {
        await using ConnectionMultiplexer redis = await ConnectAsync(_fixture.Server.EndPoint);
        IDatabase db = redis.GetDatabase();

        Assert.True(await db.StringSetAsync("str:a", "hello"));
        Assert.Equal("hello", await db.StringGetAsync("str:a"));
        Assert.Equal(10, await db.StringAppendAsync("str:a", "world"));
        Assert.Equal("helloworld", await db.StringGetAsync("str:a"));
        Assert.Equal(10, await db.StringLengthAsync("str:a"));
        Assert.Equal(0, await db.StringLengthAsync("str:missing"));
        Assert.True((await db.StringGetAsync("str:missing")).IsNull);

        Assert.Equal(1, await db.StringIncrementAsync("str:n"));
        Assert.Equal(11, await db.StringIncrementAsync("str:n", 10));
        Assert.Equal(10, await db.StringDecrementAsync("str:n"));
        Assert.Equal(-5, await db.StringDecrementAsync("str:n", 15));
        await Assert.ThrowsAsync<RedisServerException>(() => db.StringIncrementAsync("str:a"));
        await db.StringSetAsync("str:max", long.MaxValue.ToString(System.Globalization.CultureInfo.InvariantCulture));
        RedisServerException overflow = await Assert.ThrowsAsync<RedisServerException>(() => db.StringIncrementAsync("str:max"));
        Assert.Contains("overflow", overflow.Message, StringComparison.Ordinal);

        Assert.True(await db.StringSetAsync([new("str:m1", "1"), new("str:m2", "2")]));
        RedisValue[] values = await db.StringGetAsync(["str:m1", "str:missing", "str:m2"]);
        Assert.Equal(["1", RedisValue.Null, "2"], values);

        Assert.Equal("1", await db.StringGetDeleteAsync("str:m1"));
        Assert.True((await db.StringGetAsync("str:m1")).IsNull);

        // Keys and values are byte strings: zero bytes, CR and LF and non-UTF-8 bytes go through unchanged.
        byte[] key = [0, 13, 10, 255, 1];
        byte[] value = Enumerable.Range(0, 256).Select(i => (byte)i).ToArray();
        await db.StringSetAsync(key, value);
        Assert.Equal(value, (byte[]?)await db.StringGetAsync(key));
        byte[] large = new byte[300_000];
        Random.Shared.NextBytes(large);
        await db.StringSetAsync("str:large", large);
        Assert.Equal(large, (byte[]?)await db.StringGetAsync("str:large"));
    }

    [Fact]
    public async Task Conditional_sets_and_expiry()
    {
        await using ConnectionMultiplexer redis = await ConnectAsync(_fixture.Server.EndPoint);
        IDatabase db = redis.GetDatabase();

        Assert.True(await db.StringSetAsync("cond:a", "1", when: When.NotExists));
        Assert.False(await db.StringSetAsync("cond:a", "2", when: When.NotExists));
        Assert.Equal("1", await db.StringGetAsync("cond:a"));
        Assert.False(await db.StringSetAsync("cond:b", "1", when: When.Exists));
        Assert.False(await db.KeyExistsAsync("cond:b"));
        Assert.True(await db.StringSetAsync("cond:a", "3", when: When.Exists));
        Assert.Equal("3", await db.StringSetAndGetAsync("cond:a", "4"));
        Assert.Equal("4", await db.StringGetAsync("cond:a"));

        // A time to live, read back; a key without one.
        await db.StringSetAsync("cond:ttl", "v", TimeSpan.FromSeconds(100));
        TimeSpan? ttl = await db.KeyTimeToLiveAsync("cond:ttl");
        Assert.NotNull(ttl);
        Assert.InRange(ttl.Value, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(100));
        Assert.Null(await db.KeyTimeToLiveAsync("cond:a"));
        Assert.True(await db.KeyExpireAsync("cond:a", TimeSpan.FromSeconds(50)));
        Assert.InRange((await db.KeyTimeToLiveAsync("cond:a"))!.Value, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(50));
        Assert.Equal("4", await db.StringGetAsync("cond:a"));
        Assert.False(await db.KeyExpireAsync("cond:missing", TimeSpan.FromSeconds(50)));
        Assert.False(await db.KeyExistsAsync("cond:missing"));

        // An expiry in the past: the key reads as absent at once, by every command.
        await db.ExecuteAsync("SET", "cond:past", "v", "PXAT", "1");
        Assert.True((await db.StringGetAsync("cond:past")).IsNull);
        Assert.False(await db.KeyExistsAsync("cond:past"));
        Assert.Equal(1, await db.StringIncrementAsync("cond:past"));
        Assert.True(await db.KeyExpireAsync("cond:a", TimeSpan.FromMilliseconds(-1)));
        Assert.False(await db.KeyExistsAsync("cond:a"));
    }

    [Fact]
    public async Task Keys_delete_exist_and_scan()
    {
        await using InProcessServer server = await InProcessServer.StartAsync();
        await using ConnectionMultiplexer redis = await ConnectAsync(server.EndPoint);
        IDatabase db = redis.GetDatabase();
        for (int i = 0; i < 250; i++)
        {
            await db.StringSetAsync($"scan:{i}", i);
        }

        await db.StringSetAsync("other", "x");
        Assert.Equal(2, await db.KeyDeleteAsync(["scan:0", "scan:1", "scan:missing"]));
        Assert.Equal(2, await db.KeyExistsAsync(["scan:2", "scan:3", "scan:1"]));

        IServer admin = redis.GetServer(server.EndPoint);
        Assert.Equal(249, await admin.DatabaseSizeAsync());
        // SE.Redis pages through SCAN with the cursors the server returns.
        var keys = new HashSet<string>();
        await foreach (RedisKey key in admin.KeysAsync(pattern: "scan:*", pageSize: 17))
        {
            keys.Add(key!);
        }

        Assert.Equal(Enumerable.Range(2, 248).Select(i => $"scan:{i}").ToHashSet(), keys);
    }

    [Fact]
    public async Task Errors_are_redis_errors_and_the_connection_goes_on()
    {
        await using ConnectionMultiplexer redis = await ConnectAsync(_fixture.Server.EndPoint);
        IDatabase db = redis.GetDatabase();
        RedisServerException unknown = await Assert.ThrowsAsync<RedisServerException>(() => db.ExecuteAsync("NOSUCH", "a"));
        Assert.StartsWith("ERR unknown command 'NOSUCH'", unknown.Message, StringComparison.Ordinal);
        RedisServerException arity = await Assert.ThrowsAsync<RedisServerException>(() => db.ExecuteAsync("GET"));
        Assert.Equal("ERR wrong number of arguments for 'get' command", arity.Message);
        await Assert.ThrowsAsync<RedisServerException>(() => db.ExecuteAsync("SET", "k", "v", "EX", "0"));
        await Assert.ThrowsAsync<RedisServerException>(() => db.ExecuteAsync("SET", "k", "v", "NX", "XX"));
        Assert.Equal("PONG", (string?)await db.ExecuteAsync("PING"));
        Assert.Equal("hi", (string?)await db.ExecuteAsync("ECHO", "hi"));
    }

    [Fact]
    public async Task Thousands_of_commands_in_flight_complete_in_order()
    {
        await using ConnectionMultiplexer redis = await ConnectAsync(_fixture.Server.EndPoint);
        IDatabase db = redis.GetDatabase();
        const int count = 20_000;
        var increments = new Task<long>[count];
        var sets = new Task<bool>[count];
        for (int i = 0; i < count; i++)
        {
            // Never awaited one at a time: the multiplexer pipelines them all on one connection.
            sets[i] = db.StringSetAsync($"flight:{i}", i);
            increments[i] = db.StringIncrementAsync("flight:counter");
        }

        Assert.All(await Task.WhenAll(sets), Assert.True);
        long[] counters = await Task.WhenAll(increments);
        Assert.Equal(Enumerable.Range(1, count).Select(i => (long)i), counters);
        var gets = Enumerable.Range(0, count).Select(i => db.StringGetAsync($"flight:{i}")).ToArray();
        RedisValue[] values = await Task.WhenAll(gets);
        Assert.Equal(Enumerable.Range(0, count).Select(i => (RedisValue)i), values);
    }

    [Fact]
    public async Task Resp3_clients_get_resp3_replies()
    {
        await using ConnectionMultiplexer redis = await ConnectAsync(_fixture.Server.EndPoint, RedisProtocol.Resp3);
        IDatabase db = redis.GetDatabase();
        await db.StringSetAsync("resp3:a", "1");
        Assert.Equal("1", await db.StringGetAsync("resp3:a"));
        Assert.True((await db.StringGetAsync("resp3:missing")).IsNull);
        Assert.Equal(RedisProtocol.Resp3, redis.GetServer(_fixture.Server.EndPoint).Protocol);
    }
}
