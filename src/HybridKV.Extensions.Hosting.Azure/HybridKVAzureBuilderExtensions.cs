using Azure.Core;
using HybridKV.Extensions.Hosting;
using HybridKV.Extensions.Hosting.Azure;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>
/// Puts a hosted store on Azure Storage from configuration:
/// <c>builder.Services.AddHybridKV&lt;Store, Session&gt;().UseAzureStorage()</c> with
/// <c>"HybridKV": { "Azure": { "ConnectionString": "...", "Container": "store1" } }</c>.
/// </summary>
public static class HybridKVAzureBuilderExtensions
{
    /// <summary>
    /// Binds <see cref="HybridKVAzureOptions"/> from the section <c>Azure</c> under the store's configuration section
    /// (<c>HybridKV:Azure</c> by default), then runs <paramref name="configure"/>. When they name a container
    /// (<see cref="HybridKVAzureOptions.ConnectionString"/>, <see cref="HybridKVAzureOptions.Container"/> or
    /// <see cref="HybridKVAzureOptions.ContainerUri"/> set), the store's log goes to an
    /// <see cref="HybridKV.Azure.AzurePageBlobDevice"/> and its checkpoints to an
    /// <see cref="HybridKV.Azure.AzureCheckpointStore"/> in that container, opened when the host starts (before the
    /// store recovers) and released when it stops; otherwise the store stays in <see cref="HybridKVOptions.Directory"/>.
    /// The settings are validated when the host starts, with the store's options: an invalid one stops the host with an
    /// <see cref="OptionsValidationException"/> naming it.
    /// </summary>
    /// <param name="builder">The store, from <c>AddHybridKV</c>.</param>
    /// <param name="configure">Sets Azure options in code, after configuration (a <see cref="TokenCredential"/>,
    /// <see cref="HybridKVAzureOptions.ConfigureDevice"/>); with a container URI and no credential here, the
    /// <see cref="TokenCredential"/> registered in the host's services is used.</param>
    /// <returns><paramref name="builder"/>.</returns>
    public static HybridKVBuilder UseAzureStorage(this HybridKVBuilder builder, Action<HybridKVAzureOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        string name = builder.OptionsName;
        string? sectionPath = builder.ConfigSectionPath is null
            ? null
            : ConfigurationPath.Combine(builder.ConfigSectionPath, HybridKVAzureOptions.SectionName);
        OptionsBuilder<HybridKVAzureOptions> azure = builder.Services.AddOptions<HybridKVAzureOptions>(name);
        if (sectionPath is not null)
        {
            azure.BindConfiguration(sectionPath);
        }

        if (configure is not null)
        {
            azure.Configure(configure);
        }

        // Runs after AddHybridKV's own configuration of the store's options, so that the validator sees a Directory
        // set there together with Azure settings.
        builder.Services.AddOptions<HybridKVOptions>(name)
            .Configure<IOptionsMonitor<HybridKVAzureOptions>, IServiceProvider>((options, monitor, services) =>
            {
                HybridKVAzureOptions settings = monitor.Get(name);
                if (settings.IsConfigured)
                {
                    TokenCredential? credential = settings.Credential ?? services.GetService<TokenCredential>();
                    options.StorageProvider = new AzureStorageProvider(settings, credential, sectionPath);
                }
            });
        return builder;
    }
}
