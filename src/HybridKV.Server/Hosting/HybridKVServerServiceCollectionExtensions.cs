using HybridKV.Extensions.Hosting;
using HybridKV.Server.Hosting;
using HybridKV.Server.Networking;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Adds the HybridKV RESP server to a host: <c>builder.Services.AddHybridKVServer()</c>.</summary>
public static class HybridKVServerServiceCollectionExtensions
{
    /// <summary>
    /// Adds a store of byte-string keys and values (opened, recovered, checkpointed and closed by the hosting package,
    /// options from <paramref name="storeSectionPath"/>) and a RESP server over it (options from
    /// <paramref name="serverSectionPath"/>) that starts listening once the store is recovered and stops before the
    /// store takes its final checkpoint.
    /// </summary>
    /// <param name="services">The host's services.</param>
    /// <param name="storeSectionPath">The configuration section of the store's <see cref="HybridKVOptions"/>;
    /// <see langword="null"/> for none.</param>
    /// <param name="serverSectionPath">The configuration section of the <see cref="RespServerOptions"/>;
    /// <see langword="null"/> for none.</param>
    /// <param name="configureStore">Sets store options in code, after configuration.</param>
    /// <param name="configure">Sets server options in code, after configuration.</param>
    /// <returns>The store's builder (for example to call <c>UseAzureStorage()</c> on).</returns>
    public static HybridKVBuilder AddHybridKVServer(
        this IServiceCollection services,
        string? storeSectionPath = HybridKVOptions.DefaultSectionName,
        string? serverSectionPath = RespServerOptions.DefaultSectionName,
        Action<HybridKVOptions>? configureStore = null,
        Action<RespServerOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        HybridKVBuilder builder = services.AddHybridKV<RespStore, RespSession>(storeSectionPath, options =>
        {
            // The server gives each connection a session of its own; the pool's sessions go unused, so one will do.
            options.SessionPoolSize = 1;
            configureStore?.Invoke(options);
        });

        // Room in the epoch table for every connection (one more for a session being continued) beside the pool's.
        services.AddOptions<HybridKVOptions>(builder.OptionsName)
            .PostConfigure<IOptions<RespServerOptions>>((store, server) =>
                store.MaxSessions = Math.Max(store.MaxSessions, server.Value.MaxConnections + store.SessionPoolSize + 1));

        OptionsBuilder<RespServerOptions> options = services.AddOptions<RespServerOptions>();
        if (serverSectionPath is not null)
        {
            options.BindConfiguration(serverSectionPath);
        }

        if (configure is not null)
        {
            options.Configure(configure);
        }

        options.ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<RespServerOptions>, RespServerOptionsValidator>());
        services.TryAddSingleton<ServerStatistics>();
        services.TryAddSingleton<RespServer>();
        services.AddHostedService(sp => sp.GetRequiredService<RespServer>());
        services.AddSingleton(sp => new ServerMetrics(sp.GetRequiredService<System.Diagnostics.Metrics.IMeterFactory>(),
            sp.GetRequiredService<ServerStatistics>()));
        return builder;
    }

    /// <summary>
    /// Adds the health check of the server's store (see the hosting package's <c>AddHybridKV</c> check): unhealthy
    /// until it is recovered, once it stops, after a device error or a failed checkpoint; degraded while writes wait
    /// too long to become durable.
    /// </summary>
    /// <param name="builder">The health checks builder.</param>
    /// <param name="name">The check's name. Default <c>hybridkv-server</c>.</param>
    /// <param name="tags">Tags to filter checks by.</param>
    /// <returns><paramref name="builder"/>.</returns>
    public static IHealthChecksBuilder AddHybridKVServer(this IHealthChecksBuilder builder, string name = "hybridkv-server",
        IEnumerable<string>? tags = null) =>
        builder.AddHybridKV<RespStore, RespSession>(name, tags: tags);
}
