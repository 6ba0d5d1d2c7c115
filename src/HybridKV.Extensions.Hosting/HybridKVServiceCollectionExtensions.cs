using HybridKV;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers a HybridKV store in a host: <c>builder.Services.AddHybridKV&lt;Store, Session&gt;()</c>.</summary>
public static class HybridKVServiceCollectionExtensions
{
    /// <summary>
    /// Adds a store of type <typeparamref name="TStore"/>, opened and recovered by a hosted service before the
    /// application starts serving, checkpointed periodically and on demand, and closed with a final checkpoint when the
    /// host stops; and <see cref="HybridKVSessionPool{TStore, TSession}"/>, through which handlers use it. The options
    /// are bound from the configuration section <paramref name="configSectionPath"/>, then
    /// <paramref name="configure"/> runs, and they are validated when the host starts.
    /// </summary>
    /// <typeparam name="TStore">The store type (a generated store, such as <c>Counts.Store</c>).</typeparam>
    /// <typeparam name="TSession">The store's session type (such as <c>Counts.Session</c>).</typeparam>
    /// <param name="services">The host's services.</param>
    /// <param name="configSectionPath">The configuration section of the options; <see langword="null"/> for none.</param>
    /// <param name="configure">Sets options in code, after configuration.</param>
    /// <returns>The store's builder, which other packages extend (<c>.UseAzureStorage()</c>); its
    /// <see cref="HybridKVBuilder.Services"/> is <paramref name="services"/>.</returns>
    /// <exception cref="ArgumentException">A store of this type is already added.</exception>
    public static HybridKVBuilder AddHybridKV<TStore, TSession>(
        this IServiceCollection services,
        string? configSectionPath = HybridKVOptions.DefaultSectionName,
        Action<HybridKVOptions>? configure = null)
        where TStore : class, IHybridKVStore<TStore, TSession>
        where TSession : class, IHybridKVSession
    {
        ArgumentNullException.ThrowIfNull(services);
        if (services.Any(d => d.ServiceType == typeof(HybridKVStoreHost<TStore, TSession>)))
        {
            throw new ArgumentException(
                $"A HybridKV store of type {TypeDisplayName.Of(typeof(TStore))} is already added: one store per type per host.",
                nameof(services));
        }

        string name = HybridKVStoreHost<TStore, TSession>.OptionsName;
        OptionsBuilder<HybridKVOptions> options = services.AddOptions<HybridKVOptions>(name);
        if (configSectionPath is not null)
        {
            options.BindConfiguration(configSectionPath);
        }

        if (configure is not null)
        {
            options.Configure(configure);
        }

        options.ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<HybridKVOptions>>(new HybridKVOptionsValidator()));
        services.AddMetrics();
        services.AddSingleton(_ => new HybridKVSessionPool<TStore, TSession>());
        services.AddSingleton<HybridKVStoreHost<TStore, TSession>>();
        services.AddHostedService(sp => sp.GetRequiredService<HybridKVStoreHost<TStore, TSession>>());
        services.AddSingleton(sp => sp.GetRequiredService<HybridKVSessionPool<TStore, TSession>>().Store);
        return new HybridKVBuilder(services, name, configSectionPath);
    }
}
