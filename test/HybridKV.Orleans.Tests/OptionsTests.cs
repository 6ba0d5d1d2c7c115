using Microsoft.Extensions.DependencyInjection;
using Orleans.Hosting;
using Orleans.Runtime;
using Orleans.Storage;

namespace HybridKV.Orleans.Tests;

/// <summary>Grain storage options checked when the provider is created: a failure names the option.</summary>
[Trait("Category", "Orleans")]
public sealed class OptionsTests
{
    [Theory]
    [InlineData(null, 32, "HybridKVGrainStorageOptions.Directory is ''")]
    [InlineData("data", 0, "HybridKVGrainStorageOptions.SessionPoolSize is 0")]
    public void A_misconfigured_provider_names_the_option(string? directory, int poolSize, string expected)
    {
        var services = new ServiceCollection();
        services.AddLogging();
        services.AddOptions<global::Orleans.Configuration.SiloOptions>().Configure(o => o.SiloName = "silo");
        services.AddSingleton<IGrainStorageSerializer>(new NoSerializer());
        services.AddHybridKVGrainStorage("bad", options =>
        {
            options.Directory = directory;
            options.SessionPoolSize = poolSize;
        });
        using ServiceProvider provider = services.BuildServiceProvider();
        OrleansConfigurationException error = Assert.Throws<OrleansConfigurationException>(
            () => provider.GetRequiredKeyedService<IGrainStorage>("bad"));
        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
        Assert.Contains("'bad'", error.Message, StringComparison.Ordinal);
    }

    private sealed class NoSerializer : IGrainStorageSerializer
    {
        public BinaryData Serialize<T>(T? input) => throw new NotSupportedException();

        public T Deserialize<T>(BinaryData input) => throw new NotSupportedException();
    }
}
