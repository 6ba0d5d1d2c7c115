using System.Diagnostics.Metrics;
using HybridKV.Server.Hosting;
using HybridKV.Server.Networking;
using HybridKV.Server.Tests.Support;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Hosting;

namespace HybridKV.Server.Tests;

/// <summary>The server in the generic host: meters through IMeterFactory, INFO's figures, the health check, options.</summary>
[Trait("Category", "Server")]
public sealed class HostingTests
{
    [Fact]
    public async Task Meters_and_info_count_connections_commands_and_bytes()
    {
        await using InProcessServer server = await InProcessServer.StartAsync();
        IMeterFactory meters = server.Services.GetRequiredService<IMeterFactory>();
        using var commands = new MetricCollector<long>(meters, ServerMetrics.MeterName, "hybridkv.server.commands");
        using var connections = new MetricCollector<long>(meters, ServerMetrics.MeterName, "hybridkv.server.connections");
        using var received = new MetricCollector<long>(meters, ServerMetrics.MeterName, "hybridkv.server.bytes.received");
        using var sent = new MetricCollector<long>(meters, ServerMetrics.MeterName, "hybridkv.server.bytes.sent");

        await using RespClient client = await RespClient.ConnectAsync(server.Port);
        for (int i = 0; i < 10; i++)
        {
            Assert.Equal("OK", await client.CallAsync("SET", $"m:{i}", "v"));
        }

        commands.RecordObservableInstruments();
        connections.RecordObservableInstruments();
        received.RecordObservableInstruments();
        sent.RecordObservableInstruments();
        Assert.Equal(10, commands.LastMeasurement!.Value);
        Assert.Equal(1, connections.LastMeasurement!.Value);
        Assert.Equal(10 * RespClient.Encode("SET", "m:0", "v").Length, received.LastMeasurement!.Value);
        Assert.Equal(10 * "+OK\r\n".Length, sent.LastMeasurement!.Value);

        string info = Assert.IsType<string>(await client.CallAsync("INFO"));
        Assert.Contains("# Server\r\nredis_version:7.2.0\r\n", info, StringComparison.Ordinal);
        Assert.Contains($"tcp_port:{server.Port}\r\n", info, StringComparison.Ordinal);
        Assert.Contains("connected_clients:1\r\n", info, StringComparison.Ordinal);
        // The ten SETs and this INFO.
        Assert.Contains("total_commands_processed:11\r\n", info, StringComparison.Ordinal);
        Assert.Contains("# Persistence\r\n", info, StringComparison.Ordinal);
        Assert.Contains("hybridkv_log_tail_address:", info, StringComparison.Ordinal);
        Assert.DoesNotContain("# Keyspace", info, StringComparison.Ordinal);
        string keyspace = Assert.IsType<string>(await client.CallAsync("INFO", "keyspace"));
        Assert.Equal("# Keyspace\r\ndb0:keys=10,expires=0,avg_ttl=0\r\n\r\n", keyspace);
    }

    [Fact]
    public async Task The_health_check_reports_the_store()
    {
        await using InProcessServer server = await InProcessServer.StartAsync();
        HealthReport report = await server.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();
        Assert.Equal(HealthStatus.Healthy, report.Entries["hybridkv-server"].Status);
    }

    [Fact]
    public void Invalid_options_are_refused_with_reasons()
    {
        var result = new RespServerOptionsValidator().Validate(null, new RespServerOptions
        {
            BindAddress = "not an address",
            Port = 70000,
            MaxConnections = 0,
            MaxRequestBytes = 1,
            IoThreads = -1,
            BusyPollMicroseconds = 10_001,
        });
        Assert.True(result.Failed);
        Assert.Equal(6, result.Failures!.Count());
        Assert.Contains(result.Failures!, failure => failure.Contains("BusyPollMicroseconds", StringComparison.Ordinal) &&
                                                     failure.Contains("10001", StringComparison.Ordinal));
        Assert.Contains(result.Failures!, failure => failure.Contains("IoThreads", StringComparison.Ordinal) &&
                                                     failure.Contains("-1", StringComparison.Ordinal));
        Assert.True(new RespServerOptionsValidator().Validate(null, new RespServerOptions()).Succeeded);
    }

    [Theory]
    [InlineData(0, 1, 1)]
    [InlineData(0, 2, 1)]
    [InlineData(0, 4, 3)]
    [InlineData(0, 8, 6)]
    [InlineData(0, 64, 48)]
    [InlineData(5, 2, 5)]
    public void The_io_threads_are_three_quarters_of_the_processors_unless_set(int configured, int processors, int expected) =>
        Assert.Equal(expected, new RespServerOptions { IoThreads = configured }.IoThreadsFor(processors));

    [Fact]
    public async Task A_stop_out_of_time_closes_every_connection_under_it_idle_or_blocked_on_a_client_that_does_not_read()
    {
        await using InProcessServer server = await InProcessServer.StartAsync(options => options.IoThreads = 2);
        RespServer resp = server.Services.GetServices<IHostedService>().OfType<RespServer>().Single();
        await using RespClient idle = await RespClient.ConnectAsync(server.Port);
        await using RespClient stuck = await RespClient.ConnectAsync(server.Port);
        Assert.Equal("PONG", await idle.CallAsync("PING"));
        Assert.Equal("OK", await stuck.CallAsync("SET", "big", new string('x', 256 * 1024)));
        // Far more replies than the socket buffers hold, never read: the connection waits to send.
        await stuck.SendAsync([.. Enumerable.Range(0, 200).SelectMany(_ => RespClient.Encode("GET", "big"))]);

        // A stop whose time is already up: every socket is closed under its connection at once.
        await resp.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TimeSpan.FromMinutes(1));

        Assert.True(await idle.IsClosedByServerAsync());
        // What the kernel had already taken of the replies arrives first, then the end.
        await Task.Run(async () =>
        {
            while (!await stuck.IsClosedByServerAsync())
            {
            }
        }).WaitAsync(TimeSpan.FromMinutes(1));
    }
}
