using HybridKV.Server.Tests.Support;

namespace HybridKV.Server.Tests;

/// <summary>
/// A log several times its memory behind the server: reads and read-modify-writes of records on the device go pending
/// in the middle of pipelined batches, and complete before their replies, with the right values.
/// </summary>
[Trait("Category", "Server")]
public sealed class LargerThanMemoryTests
{
    [Fact]
    public async Task Pipelined_commands_on_records_on_the_device_reply_with_their_values()
    {
        await using InProcessServer server = await InProcessServer.StartAsync(configureStore: store =>
        {
            // Four 1 MiB pages of memory for about 24 MiB of values.
            store.MemorySizeBytes = 4L << 20;
            store.PageSizeBits = 20;
        });
        await using RespClient client = await RespClient.ConnectAsync(server.Port);
        const int keys = 20_000;
        string Value(int i) => $"{i:D8}" + new string((char)('a' + (i % 26)), 1200);

        await PipelineAsync(client, Enumerable.Range(0, keys).Select(i => RespClient.Encode("SET", $"cold:{i}", Value(i))),
            reply => Assert.Equal("OK", reply));

        string memory = Assert.IsType<string>(await client.CallAsync("INFO", "memory"));
        long logBytes = long.Parse(memory.Split("\r\n").Single(l => l.StartsWith("hybridkv_log_size_bytes:", StringComparison.Ordinal))
            .Split(':')[1], System.Globalization.CultureInfo.InvariantCulture);
        Assert.True(logBytes > 5 * (4L << 20), $"The log ({logBytes} bytes) should be several times its memory.");

        // The oldest keys first: their records left memory long ago.
        await PipelineAsync(client, Enumerable.Range(0, keys).Select(i => RespClient.Encode("GET", $"cold:{i}")),
            (reply, i) => Assert.Equal(Value(i), reply));
        await PipelineAsync(client, Enumerable.Range(0, 2_000).Select(i => RespClient.Encode("APPEND", $"cold:{i}", "+tail")),
            (reply, i) => Assert.Equal((long)(Value(i).Length + 5), reply));
        await PipelineAsync(client, Enumerable.Range(0, 2_000).Select(i => RespClient.Encode("STRLEN", $"cold:{i}")),
            (reply, i) => Assert.Equal((long)(Value(i).Length + 5), reply));
        Assert.Equal(Value(1) + "+tail", await client.CallAsync("GET", "cold:1"));
        Assert.Equal(1L, await client.CallAsync("EXISTS", "cold:2"));
        Assert.Equal(1L, await client.CallAsync("DEL", "cold:3"));
        Assert.Null(await client.CallAsync("GET", "cold:3"));
    }

    private static Task PipelineAsync(RespClient client, IEnumerable<byte[]> commands, Action<object?> check) =>
        PipelineAsync(client, commands, (reply, _) => check(reply));

    private static async Task PipelineAsync(RespClient client, IEnumerable<byte[]> commands, Action<object?, int> check)
    {
        var request = new MemoryStream();
        int count = 0;
        foreach (byte[] command in commands)
        {
            request.Write(command);
            count++;
        }

        Task sending = client.SendAsync(request.ToArray());
        for (int i = 0; i < count; i++)
        {
            check(await client.ReadAsync(), i);
        }

        await sending;
    }
}
