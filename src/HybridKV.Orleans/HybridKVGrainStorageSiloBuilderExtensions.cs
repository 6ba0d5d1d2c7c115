using HybridKV.Extensions.Hosting;
using HybridKV.Orleans;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Orleans.Configuration;
using Orleans.Providers;
using Orleans.Runtime.Hosting;
using Orleans.Storage;

namespace Orleans.Hosting;

/// <summary>Adds HybridKV grain storage to a silo: <c>siloBuilder.AddHybridKVGrainStorage("store", o => o.Directory = "data/{SiloName}")</c>.</summary>
public static class HybridKVGrainStorageSiloBuilderExtensions
{
    /// <summary>
    /// Adds a grain storage provider named <paramref name="name"/> that keeps this silo's grain state in a HybridKV
    /// store: opened and recovered before grains run, writes checked by ETag and acknowledged once durable, a final
    /// checkpoint when the silo stops. Each silo needs its own directory.
    /// </summary>
    /// <param name="builder">The silo builder.</param>
    /// <param name="name">The provider's name, which grains give to <c>[PersistentState(..., name)]</c>.</param>
    /// <param name="configure">Sets the options; <see cref="HybridKVGrainStorageOptions.Directory"/> at least.</param>
    /// <returns><paramref name="builder"/>.</returns>
    public static ISiloBuilder AddHybridKVGrainStorage(
        this ISiloBuilder builder, string name, Action<HybridKVGrainStorageOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.AddHybridKVGrainStorage(name, configure);
        return builder;
    }

    /// <summary>Adds HybridKV grain storage as the silo's default provider (the one grains get without a name).</summary>
    /// <param name="builder">The silo builder.</param>
    /// <param name="configure">Sets the options; <see cref="HybridKVGrainStorageOptions.Directory"/> at least.</param>
    /// <returns><paramref name="builder"/>.</returns>
    public static ISiloBuilder AddHybridKVGrainStorageAsDefault(
        this ISiloBuilder builder, Action<HybridKVGrainStorageOptions> configure) =>
        builder.AddHybridKVGrainStorage(ProviderConstants.DEFAULT_STORAGE_PROVIDER_NAME, configure);

    /// <summary>Adds a HybridKV grain storage provider named <paramref name="name"/> to a silo's services.</summary>
    /// <param name="services">The silo's services.</param>
    /// <param name="name">The provider's name.</param>
    /// <param name="configure">Sets the options; <see cref="HybridKVGrainStorageOptions.Directory"/> at least.</param>
    /// <returns><paramref name="services"/>.</returns>
    public static IServiceCollection AddHybridKVGrainStorage(
        this IServiceCollection services, string name, Action<HybridKVGrainStorageOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<HybridKVGrainStorageOptions>(name).Configure(configure);
        services.AddTransient<IPostConfigureOptions<HybridKVGrainStorageOptions>,
            DefaultStorageProviderSerializerOptionsConfigurator<HybridKVGrainStorageOptions>>();
        services.AddMetrics();
        services.AddGrainStorage(name, Create);
        return services;
    }

    private static HybridKVGrainStorage Create(IServiceProvider services, string name)
    {
        HybridKVGrainStorageOptions options = services.GetRequiredService<IOptionsMonitor<HybridKVGrainStorageOptions>>().Get(name);
        string siloName = services.GetRequiredService<IOptions<SiloOptions>>().Value.SiloName;
        HybridKVOptions storeOptions = options.ToHostingOptions(siloName);
        ValidateOptionsResult validation = new HybridKVOptionsValidator().Validate(name, storeOptions);
        if (validation.Failed)
        {
            throw new Runtime.OrleansConfigurationException(
                $"HybridKV grain storage '{name}' is misconfigured: {validation.FailureMessage}");
        }

        if (options.GrainStorageSerializer is null)
        {
            throw new Runtime.OrleansConfigurationException(
                $"HybridKV grain storage '{name}' has no GrainStorageSerializer: leave it unset for the silo's default.");
        }

        return new HybridKVGrainStorage(name, options, storeOptions, services.GetRequiredService<ILoggerFactory>(),
            services.GetRequiredService<System.Diagnostics.Metrics.IMeterFactory>(),
            services.GetService<TimeProvider>() ?? TimeProvider.System);
    }
}
