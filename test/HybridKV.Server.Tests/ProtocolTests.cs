using System.Text;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using HybridKV.Server.Tests.Support;

namespace HybridKV.Server.Tests;

/// <summary>RESP on the wire: pipelines written in one piece, RESP3 framing, and every class of malformed request.</summary>
[Trait("Category", "Server")]
public sealed class ProtocolTests : IClassFixture<ServerFixture>
{
    private readonly ServerFixture _fixture;

    public ProtocolTests(ServerFixture fixture) => _fixture = fixture;

    private int Port => _fixture.Server.Port;

    [Fact]
    public async Task A_key_removed_by_several_connections_at_once_is_removed_by_exactly_one()
    {
        const int Keys = 20_000;
        const int Connections = 4;
        // A server of its own (the check at the end counts every key), with a loop per connection, so that the
        // connections' commands run on threads of their own whatever the processors.
        await using InProcessServer server = await InProcessServer.StartAsync(options => options.IoThreads = Connections);
        await using (RespClient setup = await RespClient.ConnectAsync(server.Port))
        {
            for (int k = 0; k < Keys; k += 500)
            {
                string[] set = ["MSET", .. Enumerable.Range(k, 500).SelectMany(j => new[] { $"race:{j}", $"{j}" })];
                Assert.Equal("OK", await setup.CallAsync(set));
            }
        }

        RespClient[] clients = await Task.WhenAll(Enumerable.Range(0, Connections).Select(_ => RespClient.ConnectAsync(server.Port)));
        try
        {
            // Every connection removes every key in the same order, all written at once, so that connections reach a
            // key at the same moment: half with GETDEL, half with DEL. Exactly one of them may get each key.
            byte[][] requests = [.. Enumerable.Range(0, Connections).Select(n =>
                Enumerable.Range(0, Keys).SelectMany(k => RespClient.Encode(n % 2 == 0 ? "GETDEL" : "DEL", $"race:{k}")).ToArray())];
            Task<object?[]>[] replies = [.. clients.Select(client => Task.Run(async () =>
            {
                var received = new object?[Keys];
                for (int k = 0; k < Keys; k++)
                {
                    received[k] = await client.ReadAsync();
                }

                return received;
            }))];
            await Task.WhenAll(clients.Select((client, n) => client.SendAsync(requests[n])));
            object?[][] results = await Task.WhenAll(replies);

            for (int k = 0; k < Keys; k++)
            {
                int removers = results.Count(r => r[k] is string value ? value == $"{k}" : r[k] is 1L);
                Assert.True(removers == 1, $"race:{k} was removed by {removers} connections, not exactly one");
            }
        }
        finally
        {
            foreach (RespClient client in clients)
            {
                await client.DisposeAsync();
            }
        }

        // What the removals leave behind is invisible, and a key starts afresh.
        await using RespClient after = await RespClient.ConnectAsync(server.Port);
        Assert.Equal(0L, await after.CallAsync(["EXISTS", .. Enumerable.Range(0, 1_000).Select(k => $"race:{k}")]));
        Assert.Equal(0L, await after.CallAsync("DBSIZE"));
        Assert.Equal(1L, await after.CallAsync("INCR", "race:7"));
        Assert.Equal(-1L, await after.CallAsync("TTL", "race:7"));
    }

    [Fact]
    public async Task A_pipeline_written_at_once_gets_every_reply_in_order()
    {
        await using RespClient client = await RespClient.ConnectAsync(Port);
        const int count = 5_000;
        var request = new MemoryStream();
        for (int i = 0; i < count; i++)
        {
            request.Write(RespClient.Encode("SET", $"pipe:{i}", $"v{i}"));
            request.Write(RespClient.Encode("INCR", "pipe:n"));
            request.Write(RespClient.Encode("GET", $"pipe:{i}"));
        }

        // Sent while the replies are read: the server must not wait for the client to read before it reads on.
        Task sending = client.SendAsync(request.ToArray());
        for (int i = 0; i < count; i++)
        {
            Assert.Equal("OK", await client.ReadAsync());
            Assert.Equal((long)(i + 1), await client.ReadAsync());
            Assert.Equal($"v{i}", await client.ReadAsync());
        }

        await sending;
    }

    [Fact]
    public async Task Resp3_after_hello_frames_nulls_and_maps_as_resp3()
    {
        await using RespClient client = await RespClient.ConnectAsync(Port);
        Assert.Null(await client.CallAsync("GET", "resp3raw:missing"));

        await client.SendAsync(RespClient.Encode("HELLO", "3"));
        await client.SendAsync(RespClient.Encode("GET", "resp3raw:missing"));
        // The HELLO map starts with '%', and a missing value is RESP3's null '_'.
        object? hello = await client.ReadAsync();
        var map = Assert.IsType<object?[]>(hello);
        Assert.Equal("proto", map[4]);
        Assert.Equal(3L, map[5]);
        Assert.Null(await client.ReadAsync());
        Assert.Equal(new RespError("NOPROTO unsupported protocol version"), await client.CallAsync("HELLO", "4"));
    }

    [Fact]
    public async Task Hello_3_frames_a_map_and_the_null()
    {
        using var socket = new System.Net.Sockets.TcpClient();
        await socket.ConnectAsync("127.0.0.1", Port);
        var stream = socket.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$3\r\nGET\r\n$5\r\nnokey\r\n"));
        string replies = await ReadUntilAsync(stream, "_\r\n");
        Assert.StartsWith("%7\r\n$6\r\nserver\r\n", replies, StringComparison.Ordinal);
        Assert.EndsWith("*0\r\n_\r\n", replies, StringComparison.Ordinal);
    }

    public static TheoryData<string, string> Malformed => new()
    {
        // Non-numeric counts and lengths.
        { "*x\r\n", "ERR Protocol error: invalid multibulk length" },
        { "*2\r\n$3\r\nGET\r\n$k\r\n", "ERR Protocol error: invalid bulk length" },
        { "*1\r\n$\r\n", "ERR Protocol error: invalid bulk length" },
        // Wrong lengths: a bulk string longer than declared, a missing type byte.
        { "*1\r\n$3\r\nPINGX\r\n", "ERR Protocol error: bulk string not terminated by CRLF" },
        { "*2\r\n$4\r\nPING\r\nfoo\r\n", "ERR Protocol error: expected '$', got 'f'" },
        { "*1\r\n$-5\r\n", "ERR Protocol error: invalid bulk length" },
        // Huge lengths, refused before anything is buffered.
        { "*1\r\n$999999999999\r\n", "ERR Protocol error: invalid bulk length" },
        { "*99999999999\r\n", "ERR Protocol error: invalid multibulk length" },
        { "*1\r\n$99999999999999999999999999\r\n", "ERR Protocol error: invalid bulk length" },
        // Not RESP at all.
        { "GET foo\r\n", "ERR Protocol error: expected '*', got 'G'" },
        { "\0\x01\xff", "ERR Protocol error: expected '*', got '\\x00'" },
        // Truncated frames: the client ends the stream inside a request.
        { "*2\r\n$3\r\nGET\r\n$3\r\nfo", "ERR Protocol error: unexpected end of the request" },
        { "*3\r\n$3\r\nSET", "ERR Protocol error: unexpected end of the request" },
        { "*1", "ERR Protocol error: unexpected end of the request" },
    };

    [Theory]
    [MemberData(nameof(Malformed))]
    public async Task A_malformed_request_gets_an_error_and_the_connection_closes(string request, string error)
    {
        await using RespClient client = await RespClient.ConnectAsync(Port);
        // A good command first: its reply comes before the error.
        await client.SendAsync(RespClient.Encode("PING"));
        await client.SendAsync(Encoding.Latin1.GetBytes(request));
        client.ShutdownSend();
        Assert.Equal("PONG", await client.ReadAsync());
        Assert.Equal(new RespError(error), await client.ReadAsync());
        Assert.True(await client.IsClosedByServerAsync());
        await AssertServesAsync();
    }

    [Fact]
    public async Task A_client_that_writes_far_more_than_the_server_holds_before_it_reads_gets_every_reply_in_order()
    {
        // Small limits, and more each way than the sockets' buffers hold: the server's sends find the socket full
        // while the client is still writing, and it may stop receiving while its replies wait; the client's one read
        // loop must still get every reply, in order.
        await using InProcessServer server = await InProcessServer.StartAsync(options =>
        {
            options.MaxBulkLength = 1024;
            options.MaxRequestBytes = 4096;
            options.MaxPendingOutputBytes = 16 * 1024;
        });
        await using RespClient client = await RespClient.ConnectAsync(server.Port);
        const int Commands = 10_000;
        // 10 MB of requests and 10 MB of replies: more than the sockets' buffers hold.
        string Value(int i) => $"{i}:" + new string((char)('a' + (i % 26)), 1000);
        byte[] sets = [.. Enumerable.Range(0, Commands).SelectMany(i => RespClient.Encode("SET", $"flow:{i}", Value(i)))];
        byte[] gets = [.. Enumerable.Range(0, Commands).SelectMany(i => RespClient.Encode("GET", $"flow:{i}"))];

        // Megabytes in one write each, read only as they go: the writes wait for the server, which waits for the reads.
        Task sending = Task.Run(async () =>
        {
            await client.SendAsync(sets);
            await client.SendAsync(gets);
        });
        for (int i = 0; i < Commands; i++)
        {
            Assert.Equal("OK", await client.ReadAsync());
        }

        for (int i = 0; i < Commands; i++)
        {
            Assert.Equal(Value(i), await client.ReadAsync());
        }

        await sending;
        Assert.Equal("PONG", await client.CallAsync("PING"));
    }

    [Fact]
    public async Task Limits_on_bulk_length_arguments_and_connections_close_the_offender_only()
    {
        await using InProcessServer server = await InProcessServer.StartAsync(options =>
        {
            options.MaxBulkLength = 1024;
            options.MaxArguments = 10;
            options.MaxRequestBytes = 4096;
            options.MaxConnections = 3;
        });
        await using RespClient bystander = await RespClient.ConnectAsync(server.Port);
        Assert.Equal("OK", await bystander.CallAsync("SET", "k", "v"));

        await using (RespClient big = await RespClient.ConnectAsync(server.Port))
        {
            Assert.Equal(new RespError("ERR Protocol error: invalid bulk length"),
                await big.CallAsync("SET", "k", new string('x', 1025)));
            Assert.True(await big.IsClosedByServerAsync());
        }

        await using (RespClient many = await RespClient.ConnectAsync(server.Port))
        {
            Assert.Equal(new RespError("ERR Protocol error: invalid multibulk length"),
                await many.CallAsync(["MGET", .. Enumerable.Range(0, 10).Select(i => $"k{i}")]));
            Assert.True(await many.IsClosedByServerAsync());
        }

        await using (RespClient slow = await RespClient.ConnectAsync(server.Port))
        {
            // Within every per-argument limit, but more than a request may be: refused as it arrives.
            await slow.SendAsync(Encoding.ASCII.GetBytes("*9\r\n" + string.Concat(Enumerable.Repeat("$1000\r\n" + new string('y', 1000) + "\r\n", 5))));
            Assert.Equal(new RespError("ERR Protocol error: request larger than the server allows"), await slow.ReadAsync());
            Assert.True(await slow.IsClosedByServerAsync());
        }

        await using RespClient second = await RespClient.ConnectAsync(server.Port);
        await using RespClient third = await RespClient.ConnectAsync(server.Port);
        Assert.Equal("PONG", await second.CallAsync("PING"));
        Assert.Equal("PONG", await third.CallAsync("PING"));
        await using (RespClient fourth = await RespClient.ConnectAsync(server.Port))
        {
            Assert.Equal(new RespError("ERR max number of clients reached"), await fourth.ReadAsync());
            Assert.True(await fourth.IsClosedByServerAsync());
        }

        Assert.Equal("v", await bystander.CallAsync("GET", "k"));
    }

    [Property(MaxTest = 60)]
    public Property Random_bytes_never_crash_the_server() =>
        Prop.ForAll(Arb.From(Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))), bytes =>
        {
            RunRandomAsync(bytes).GetAwaiter().GetResult();
            return true;
        });

    [Property(MaxTest = 60)]
    public Property Random_resp_like_requests_never_crash_the_server() =>
        Prop.ForAll(Arb.From(RespLikeRequests()), bytes =>
        {
            RunRandomAsync(bytes).GetAwaiter().GetResult();
            return true;
        });

    /// <summary>Requests that look like RESP (markers, CRLFs, digits, command names) so that the parser goes deep.</summary>
    private static Gen<byte[]> RespLikeRequests()
    {
        string[] pieces = ["*", "$", "\r\n", "\r", "\n", "-", "0", "1", "3", "9", "99999999999", "GET", "SET", "PING",
            "HELLO", "k", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "*1\r\n$4\r\nPING\r\n", "\0", "\xff"];
        return Gen.ListOf(Gen.Elements(pieces))
            .Select(parts => Encoding.Latin1.GetBytes(string.Concat(parts)));
    }

    private async Task RunRandomAsync(byte[] bytes)
    {
        await using (RespClient client = await RespClient.ConnectAsync(Port))
        {
            await client.SendAsync(bytes);
            client.ShutdownSend();
            // Whatever the bytes, the server answers what it can and then closes: it never hangs on them.
            while (!await client.IsClosedByServerAsync())
            {
            }
        }

        await AssertServesAsync();
    }

    private async Task AssertServesAsync()
    {
        await using RespClient other = await RespClient.ConnectAsync(Port);
        Assert.Equal("PONG", await other.CallAsync("PING"));
    }

    private static async Task<string> ReadUntilAsync(System.Net.Sockets.NetworkStream stream, string end)
    {
        var received = new StringBuilder();
        var buffer = new byte[4096];
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        while (!received.ToString().EndsWith(end, StringComparison.Ordinal))
        {
            int read = await stream.ReadAsync(buffer, deadline.Token);
            Assert.NotEqual(0, read);
            received.Append(Encoding.Latin1.GetString(buffer, 0, read));
        }

        return received.ToString();
    }
}
