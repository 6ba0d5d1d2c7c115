using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace HybridKV.Extensions.Hosting.Tests.Support;

/// <summary>A real generic host with the count store added, its logs collected; started by <see cref="StartAsync"/>.</summary>
public sealed class HostedCounters : IAsyncDisposable
{
    private HostedCounters(IHost host, FakeLogCollector logs)
    {
        Host = host;
        Logs = logs;
    }

    public IHost Host { get; }

    public FakeLogCollector Logs { get; }

    public HybridKVSessionPool<Counters.Store, Counters.Session> Pool =>
        Host.Services.GetRequiredService<HybridKVSessionPool<Counters.Store, Counters.Session>>();

    internal HybridKVStoreHost<Counters.Store, Counters.Session> StoreHost =>
        Host.Services.GetRequiredService<HybridKVStoreHost<Counters.Store, Counters.Session>>();

    /// <summary>Small sizes, so that a host starts in milliseconds; a long interval, so that only tests take checkpoints.</summary>
    public static void Small(HybridKVOptions options)
    {
        options.IndexBuckets = 1 << 10;
        options.PageSizeBits = 14;
        options.MemorySizeBytes = 1 << 18;
        options.LogSegmentSizeBits = 20;
        options.SessionPoolSize = 4;
        options.MaxSessions = 16;
        options.CheckpointInterval = TimeSpan.FromHours(1);
        options.IndexCheckpointInterval = TimeSpan.FromHours(1);
    }

    /// <summary>Builds the host: configuration from <paramref name="configuration"/>, then <paramref name="configure"/>.</summary>
    public static HostedCounters Build(
        string? directory,
        Action<HybridKVOptions>? configure = null,
        IDictionary<string, string?>? configuration = null,
        TimeProvider? time = null,
        Action<IServiceCollection>? servicesBefore = null,
        TimeSpan? maxCommitLag = null)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder(
            new HostApplicationBuilderSettings { DisableDefaults = true, EnvironmentName = "Test" });
        builder.Configuration.AddInMemoryCollection(configuration ?? new Dictionary<string, string?>());
        var logs = new FakeLogCollector();
        builder.Logging.SetMinimumLevel(LogLevel.Debug);
        builder.Logging.AddProvider(new FakeLoggerProvider(logs));
        if (time is not null)
        {
            builder.Services.AddSingleton(time);
        }

        servicesBefore?.Invoke(builder.Services);

        // Before the configuration binding that AddHybridKV adds, so that configuration overrides these.
        builder.Services.Configure<HybridKVOptions>(HybridKVStoreHost<Counters.Store, Counters.Session>.OptionsName, options =>
        {
            Small(options);
            options.Directory = directory;
        });
        builder.Services.AddHybridKV<Counters.Store, Counters.Session>(configure: configure);
        builder.Services.AddHealthChecks().AddHybridKV<Counters.Store, Counters.Session>(maxCommitLag: maxCommitLag);
        return new HostedCounters(builder.Build(), logs);
    }

    /// <summary>Builds and starts the host.</summary>
    public static async Task<HostedCounters> StartAsync(string directory, Action<HybridKVOptions>? configure = null,
        TimeProvider? time = null)
    {
        HostedCounters hosted = Build(directory, configure, time: time);
        await hosted.Host.StartAsync();
        return hosted;
    }

    public Task<HealthReport> CheckHealthAsync() =>
        Host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();

    /// <summary>Reads a counter through a pooled session.</summary>
    public Task<long> ReadAsync(long key) => Pool.RunAsync(async (session, token) =>
        (await session.ReadAsync(key, cancellationToken: token)).Output);

    public async Task StopAsync() => await Host.StopAsync();

    public async ValueTask DisposeAsync()
    {
        // A host whose start failed is not stopped (the generic host refuses), only disposed.
        if (Host.Services.GetRequiredService<IHostApplicationLifetime>().ApplicationStarted.IsCancellationRequested)
        {
            await Host.StopAsync();
        }

        await ((IAsyncDisposable)Host).DisposeAsync();
    }
}
