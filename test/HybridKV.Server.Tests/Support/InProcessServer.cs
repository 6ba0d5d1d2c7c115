using HybridKV.Extensions.Hosting;
using HybridKV.Server.Hosting;
using HybridKV.Server.Networking;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace HybridKV.Server.Tests.Support;

/// <summary>The server in a generic host in this process, on a free loopback port, its logs collected.</summary>
public sealed class InProcessServer : IAsyncDisposable
{
    private readonly IHost _host;
    private readonly TempDirectory? _ownedDirectory;

    private InProcessServer(IHost host, TempDirectory? ownedDirectory)
    {
        _host = host;
        _ownedDirectory = ownedDirectory;
    }

    /// <summary>The bound port.</summary>
    public int Port => _host.Services.GetRequiredService<RespServer>().Port;

    /// <summary>host:port, for StackExchange.Redis.</summary>
    public string EndPoint => $"127.0.0.1:{Port}";

    /// <summary>Everything the server and the store logged.</summary>
    public FakeLogCollector Logs => _host.Services.GetFakeLogCollector();

    /// <summary>The host's services.</summary>
    public IServiceProvider Services => _host.Services;

    /// <summary>The hosting package's scheduler of the server's store.</summary>
    internal CommitScheduler Commits =>
        _host.Services.GetRequiredService<HybridKVStoreHost<RespStore, RespSession>>().Commits!;

    public static async Task<InProcessServer> StartAsync(Action<RespServerOptions>? configure = null,
        string? directory = null, Action<HybridKVOptions>? configureStore = null)
    {
        TempDirectory? owned = directory is null ? new TempDirectory() : null;
        HostApplicationBuilder builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Logging.AddFakeLogging();
        builder.Logging.SetMinimumLevel(LogLevel.Debug);
        builder.Services.AddHealthChecks().AddHybridKVServer();
        builder.Services.AddHybridKVServer(null, null,
            store =>
            {
                store.Directory = directory ?? owned!.Path;
                store.MemorySizeBytes = 1L << 24;
                configureStore?.Invoke(store);
            },
            options =>
            {
                options.Port = 0;
                configure?.Invoke(options);
            });
        IHost host = builder.Build();
        await host.StartAsync();
        return new InProcessServer(host, owned);
    }

    public async ValueTask DisposeAsync()
    {
        await _host.StopAsync();
        _host.Dispose();
        _ownedDirectory?.Dispose();
    }
}
