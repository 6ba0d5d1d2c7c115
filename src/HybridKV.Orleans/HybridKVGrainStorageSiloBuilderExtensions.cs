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

    /// <summary>
    /// Places grains marked <see cref="HybridKVPlacementAttribute"/> on the silo whose store holds their state: a grain
    /// goes to the same silo (by name) every time, and is not activated while that silo is down. Needed when a cluster
    /// of several silos keeps grain state in HybridKV, since each silo's store holds only its own grains' state.
    /// </summary>
    /// <param name="builder">The silo builder.</param>
    /// <param name="siloNames">Every silo name of the cluster (set with <c>SiloOptions.SiloName</c>, the same on every
    /// silo); this silo's own name must be one of them.</param>
    /// <returns><paramref name="builder"/>.</returns>
    /// <exception cref="ArgumentException">No silo name, or a blank or repeated one.</exception>
    public static ISiloBuilder AddHybridKVPlacement(this ISiloBuilder builder, params string[] siloNames)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(siloNames);
        if (siloNames.Length == 0 || siloNames.Any(string.IsNullOrWhiteSpace) ||
            siloNames.Distinct(StringComparer.Ordinal).Count() != siloNames.Length)
        {
            throw new ArgumentException(
                $"Name every silo of the cluster once, none blank; found [{string.Join(", ", siloNames)}].",
                nameof(siloNames));
        }

        builder.Services.Configure<HybridKVPlacementOptions>(options =>
        {
            options.SiloNames.Clear();
            foreach (string name in siloNames)
            {
                options.SiloNames.Add(name);
            }
        });
        builder.Services.AddSingleton<IConfigurationValidator, PlacementValidator>();
        builder.Services.AddPlacementDirector<HybridKVPlacement, HybridKVPlacementDirector>();
        return builder;
    }

    /// <summary>Refuses to start a silo whose name is not in the placement's list: no grain would ever be placed on it,
    /// and its name is probably not the stable one the list expects.</summary>
    private sealed class PlacementValidator(IOptions<HybridKVPlacementOptions> placement, IOptions<SiloOptions> silo)
        : IConfigurationValidator
    {
        public void ValidateConfiguration()
        {
            string name = silo.Value.SiloName;
            if (!placement.Value.SiloNames.Contains(name))
            {
                throw new Runtime.OrleansConfigurationException(
                    $"This silo is named '{name}', which is not in HybridKVPlacementOptions.SiloNames " +
                    $"([{string.Join(", ", placement.Value.SiloNames)}]): set SiloOptions.SiloName to a stable name " +
                    "from that list, so that grains find their state on this silo again after a restart.");
            }
        }
    }

    private static HybridKVGrainStorage Create(IServiceProvider services, string name)
    {
        HybridKVGrainStorageOptions options = services.GetRequiredService<IOptionsMonitor<HybridKVGrainStorageOptions>>().Get(name);
        string siloName = services.GetRequiredService<IOptions<SiloOptions>>().Value.SiloName;
        HybridKVOptions storeOptions = options.ToHostingOptions(siloName);
        ValidateOptionsResult validation = new HybridKVOptionsValidator(nameof(HybridKVGrainStorageOptions)).Validate(name, storeOptions);
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
