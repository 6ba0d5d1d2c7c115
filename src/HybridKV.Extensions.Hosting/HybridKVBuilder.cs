using Microsoft.Extensions.DependencyInjection;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// One store added to a host by <c>AddHybridKV</c>: what other packages extend to configure it further, for example
/// <c>services.AddHybridKV&lt;Store, Session&gt;().UseAzureStorage()</c>.
/// </summary>
public sealed class HybridKVBuilder
{
    internal HybridKVBuilder(IServiceCollection services, string optionsName, string? configSectionPath)
    {
        Services = services;
        OptionsName = optionsName;
        ConfigSectionPath = configSectionPath;
    }

    /// <summary>The host's services.</summary>
    public IServiceCollection Services { get; }

    /// <summary>The name of the store's <see cref="HybridKVOptions"/> (one store per store type, so the store type's
    /// full name): configure them with <c>services.Configure&lt;HybridKVOptions&gt;(builder.OptionsName, ...)</c>.</summary>
    public string OptionsName { get; }

    /// <summary>The configuration section the store's options are bound from, or <see langword="null"/> for none;
    /// extensions bind their own settings from sections under it.</summary>
    public string? ConfigSectionPath { get; }
}
