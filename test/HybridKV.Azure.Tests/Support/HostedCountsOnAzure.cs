using CountStore;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace HybridKV.Azure.Tests.Support;

/// <summary>
/// A real generic host with the count store added by <c>AddHybridKV(...).UseAzureStorage()</c>, configured only from
/// an in-memory configuration (as appsettings.json would), its logs collected by a logger provider.
/// </summary>
internal sealed class HostedCountsOnAzure : IAsyncDisposable
{
    private HostedCountsOnAzure(IHost host, FakeLogCollector logs)
    {
        Host = host;
        Logs = logs;
    }

    public IHost Host { get; }

    public FakeLogCollector Logs { get; }

    public HybridKVSessionPool<Counts.Store, Counts.Session> Pool =>
        Host.Services.GetRequiredService<HybridKVSessionPool<Counts.Store, Counts.Session>>();

    /// <summary>Small pages and memory, so that a few thousand keys are larger than memory; no periodic checkpoint
    /// (only durable writes and stopping take them); a second writer fails at once instead of waiting 45 s.</summary>
    public static Dictionary<string, string?> SmallStore() => new()
    {
        ["HybridKV:IndexBuckets"] = "1024",
        ["HybridKV:PageSizeBits"] = "12",
        ["HybridKV:MemorySizeBytes"] = "65536",
        ["HybridKV:LogSegmentSizeBits"] = "20",
        ["HybridKV:SessionPoolSize"] = "4",
        ["HybridKV:MaxSessions"] = "16",
        ["HybridKV:CheckpointInterval"] = "01:00:00",
        ["HybridKV:IndexCheckpointInterval"] = "01:00:00",
        ["HybridKV:Azure:LeaseAcquireTimeout"] = "00:00:00",
    };

    /// <summary>The configuration of a store in <paramref name="container"/> of the test run's Azurite.</summary>
    public static Dictionary<string, string?> InContainer(Azurite azurite, string container)
    {
        Dictionary<string, string?> configuration = SmallStore();
        configuration["HybridKV:Azure:ConnectionString"] = azurite.ConnectionString;
        configuration["HybridKV:Azure:Container"] = container;
        return configuration;
    }

    /// <summary>Builds the host from <paramref name="configuration"/>; <paramref name="services"/> adds services first
    /// (a TokenCredential, for instance).</summary>
    public static HostedCountsOnAzure Build(
        IDictionary<string, string?> configuration, Action<IServiceCollection>? services = null)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder(
            new HostApplicationBuilderSettings { DisableDefaults = true, EnvironmentName = "Test" });
        builder.Configuration.AddInMemoryCollection(configuration);
        var logs = new FakeLogCollector();
        builder.Logging.SetMinimumLevel(LogLevel.Trace);
        builder.Logging.AddProvider(new FakeLoggerProvider(logs));
        services?.Invoke(builder.Services);
        builder.Services.AddHybridKV<Counts.Store, Counts.Session>().UseAzureStorage();
        return new HostedCountsOnAzure(builder.Build(), logs);
    }

    /// <summary>The hosting package's log lines with event id <paramref name="eventId"/> (the Azure package's ids are
    /// in the same range, under their own categories).</summary>
    public IEnumerable<FakeLogRecord> HostingLog(int eventId) =>
        Logs.GetSnapshot().Where(record => record.Category == "HybridKV.Hosting" && record.Id.Id == eventId);

    /// <summary>Whether the hosting package logged event <paramref name="eventId"/>.</summary>
    public bool Logged(int eventId) => HostingLog(eventId).Any();

    /// <summary>Every log line so far, with its exception, as text.</summary>
    public IEnumerable<string> LogText() =>
        Logs.GetSnapshot().Select(record => $"{record.Category} {record.Id} {record.Message} {record.Exception}");

    public async ValueTask DisposeAsync()
    {
        if (Host is IAsyncDisposable disposable)
        {
            await disposable.DisposeAsync();
        }
        else
        {
            Host.Dispose();
        }
    }
}
