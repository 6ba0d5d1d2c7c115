using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Orleans.Hosting;
using Orleans.TestingHost;

namespace HybridKV.Orleans.Tests;

/// <summary>In-process test clusters whose silos keep grain state in HybridKV under one root directory.</summary>
public static class Clusters
{
    public const string RootKey = "HybridKVTests:Root";
    public const string SharedDirectoryKey = "HybridKVTests:SharedDirectory";
    public const string PlacementKey = "HybridKVTests:Placement";

    /// <summary>Deploys a cluster of <paramref name="silos"/> silos, each with its store in <c>{root}/{SiloName}</c>
    /// (or all in one directory, to be refused).</summary>
    public static async Task<TestCluster> DeployAsync(string root, int silos, bool shareOneDirectory = false,
        bool placement = false, string? placementNames = null)
    {
        var builder = new TestClusterBuilder((short)silos);
        builder.Options.ClusterId = "hybridkv-" + Guid.NewGuid().ToString("N")[..8];
        builder.ConfigureHostConfiguration(configuration => configuration.AddInMemoryCollection(
            new Dictionary<string, string?>
            {
                [RootKey] = root,
                [SharedDirectoryKey] = shareOneDirectory ? "true" : "false",
                [PlacementKey] = placementNames ??
                    (placement ? string.Join(",", Enumerable.Range(0, silos).Select(SiloName)) : ""),
            }));
        builder.AddSiloBuilderConfigurator<SiloConfigurator>();
        TestCluster cluster = builder.Build();
        try
        {
            await cluster.DeployAsync();
        }
        catch
        {
            // The silos that did start are stopped, so that their stores and directories are released.
            await cluster.DisposeAsync();
            throw;
        }

        return cluster;
    }

    /// <summary>The names TestCluster gives its silos (the same after a silo restarts).</summary>
    private static string SiloName(int index) => index == 0 ? "Primary" : $"Secondary_{index}";

    private sealed class SiloConfigurator : ISiloConfigurator
    {
        public void Configure(ISiloBuilder siloBuilder)
        {
            string root = siloBuilder.Configuration[RootKey]!;
            bool shared = siloBuilder.Configuration[SharedDirectoryKey] == "true";

            // A silo that fails to start is stopped; without a short timeout its stop waits half a minute.
            siloBuilder.Services.Configure<HostOptions>(options => options.ShutdownTimeout = TimeSpan.FromSeconds(2));
            if (siloBuilder.Configuration[PlacementKey] is { Length: > 0 } names)
            {
                siloBuilder.AddHybridKVPlacement(names.Split(','));
            }

            siloBuilder.AddHybridKVGrainStorage(CounterGrain.StorageName, options =>
            {
                options.Directory = shared ? Path.Combine(root, "shared") : Path.Combine(root, "{SiloName}");
                options.IndexBuckets = 1 << 10;
                options.PageSizeBits = 16;
                options.MemorySizeBytes = 1 << 20;
                options.SessionPoolSize = 4;
                options.CheckpointInterval = TimeSpan.FromHours(1);
            });
        }
    }
}
