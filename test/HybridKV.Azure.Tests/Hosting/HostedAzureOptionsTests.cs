using Azure.Core;
using Azure.Storage;
using Azure.Storage.Sas;
using HybridKV.Azure.Tests.Support;
using HybridKV.Devices;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace HybridKV.Azure.Tests.Hosting;

/// <summary>
/// The Azure settings of a hosted store, from configuration: each invalid one stops the host when it starts with a
/// message naming the option and its configuration key, and no log line or exception holds a connection string's key
/// or a SAS.
/// </summary>
[Trait("Category", "Azure")]
public sealed class HostedAzureOptionsTests
{
    // Placeholders that the test replaces with this run's values.
    private const string ConnectionString = "{connection}";
    private const string Endpoint = "{endpoint}";

    [Theory]
    [InlineData("Container=store1", "Neither HybridKVAzureOptions.ConnectionString (configuration key 'HybridKV:Azure:ConnectionString') nor HybridKVAzureOptions.ContainerUri (configuration key 'HybridKV:Azure:ContainerUri') is set")]
    [InlineData($"ConnectionString={ConnectionString}|ContainerUri={Endpoint}/store1", "HybridKVAzureOptions.ConnectionString (configuration key 'HybridKV:Azure:ConnectionString') and HybridKVAzureOptions.ContainerUri (configuration key 'HybridKV:Azure:ContainerUri') are both set")]
    [InlineData($"ConnectionString={ConnectionString}", "HybridKVAzureOptions.Container (configuration key 'HybridKV:Azure:Container') is not set")]
    [InlineData($"ConnectionString={ConnectionString}|Container=Bad_Name", "HybridKVAzureOptions.Container (configuration key 'HybridKV:Azure:Container'): 'Bad_Name' is not a valid blob container name")]
    [InlineData($"ConnectionString={ConnectionString}|Container=store1|:Directory=data", "HybridKVOptions.Directory is 'data', but the store's log and checkpoints go to Azure Storage container")]
    [InlineData("ConnectionString=AccountName=x;AccountKey=c2VjcmV0a2V5;garbage|Container=store1", "HybridKVAzureOptions.ConnectionString (configuration key 'HybridKV:Azure:ConnectionString') is not a valid Azure Storage connection string (its value is not shown")]
    [InlineData("ContainerUri=https://account.blob.core.windows.net/store1", "HybridKVAzureOptions.ContainerUri (configuration key 'HybridKV:Azure:ContainerUri') is set, but there is no TokenCredential")]
    [InlineData($"ContainerUri={Endpoint}/store1", "HybridKVAzureOptions.ContainerUri (configuration key 'HybridKV:Azure:ContainerUri') is '{endpoint}/store1': it must be an https URI")]
    [InlineData("ContainerUri=https://account.blob.core.windows.net/store1|Container=store1", "HybridKVAzureOptions.Container (configuration key 'HybridKV:Azure:Container') is 'store1', but ContainerUri already names the container")]
    [InlineData("ContainerUri=not a uri?sig=c2VjcmV0a2V5", "HybridKVAzureOptions.ContainerUri (configuration key 'HybridKV:Azure:ContainerUri') is not an absolute http(s) URI (its value is not shown")]
    [InlineData($"ConnectionString={ConnectionString}|Container=store1|LogBlobPrefix=data|CheckpointBlobPrefix=data", "HybridKVAzureOptions.LogBlobPrefix (configuration key 'HybridKV:Azure:LogBlobPrefix') and HybridKVAzureOptions.CheckpointBlobPrefix (configuration key 'HybridKV:Azure:CheckpointBlobPrefix') are both 'data'")]
    [InlineData($"ConnectionString={ConnectionString}|Container=store1|LogBlobPrefix=/bad", "The Azure log device's BlobPrefix (from HybridKVAzureOptions.LogBlobPrefix")]
    [InlineData($"ConnectionString={ConnectionString}|Container=store1|:LogSegmentSizeBits=8", "LogSegmentSizeBits")]
    public async Task An_invalid_Azure_setting_stops_the_host_naming_it_without_a_secret(string settings, string expected)
    {
        Azurite azurite = await Azurite.Instance;
        Dictionary<string, string?> configuration = HostedCountsOnAzure.SmallStore();
        foreach (string setting in settings.Split('|'))
        {
            int equals = setting.IndexOf('=', StringComparison.Ordinal);
            string key = setting[..equals];
            string value = setting[(equals + 1)..]
                .Replace(ConnectionString, azurite.ConnectionString, StringComparison.Ordinal)
                .Replace(Endpoint, azurite.BlobEndpoint.ToString(), StringComparison.Ordinal);
            configuration[key.StartsWith(':') ? "HybridKV" + key : "HybridKV:Azure:" + key] = value;
        }

        await using HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(configuration);
        OptionsValidationException error = await Assert.ThrowsAsync<OptionsValidationException>(() => hosted.Host.StartAsync());
        Assert.Contains(expected.Replace(Endpoint, azurite.BlobEndpoint.ToString(), StringComparison.Ordinal), error.Message,
            StringComparison.Ordinal);
        AssertNoSecret([error.ToString(), .. hosted.LogText()], azurite.AccountKey, "c2VjcmV0a2V5");
    }

    [Fact]
    public async Task A_container_URI_with_a_SAS_is_refused_without_quoting_the_SAS()
    {
        Dictionary<string, string?> configuration = HostedCountsOnAzure.SmallStore();
        configuration["HybridKV:Azure:ContainerUri"] = "https://account.blob.core.windows.net/store1?sv=2025-01-01&sig=c2VjcmV0a2V5";
        await using HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(
            configuration, services => services.AddSingleton<TokenCredential>(new CountingCredential()));
        OptionsValidationException error = await Assert.ThrowsAsync<OptionsValidationException>(() => hosted.Host.StartAsync());
        Assert.Contains("carries a query string", error.Message, StringComparison.Ordinal);
        Assert.Contains("https://account.blob.core.windows.net/store1", error.Message, StringComparison.Ordinal);
        AssertNoSecret([error.ToString(), .. hosted.LogText()], "c2VjcmV0a2V5", "sig=");
    }

    /// <summary>With no directory and no Azure settings, the message says what is missing and that Azure is another
    /// place.</summary>
    [Fact]
    public async Task Neither_a_directory_nor_Azure_settings_stops_the_host()
    {
        await using HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(HostedCountsOnAzure.SmallStore());
        OptionsValidationException error = await Assert.ThrowsAsync<OptionsValidationException>(() => hosted.Host.StartAsync());
        Assert.Contains("HybridKVOptions.Directory is ''", error.Message, StringComparison.Ordinal);
        Assert.Contains("UseAzureStorage()", error.Message, StringComparison.Ordinal);
    }

    /// <summary>A container URI takes the TokenCredential registered in the host's services: the settings pass, and
    /// opening asks that credential for a token (which it refuses, before any request is sent).</summary>
    [Fact]
    public async Task A_container_URI_uses_the_TokenCredential_registered_in_the_services()
    {
        Dictionary<string, string?> configuration = HostedCountsOnAzure.SmallStore();
        configuration["HybridKV:Azure:ContainerUri"] = "https://account.blob.core.windows.net/store1";
        var credential = new CountingCredential();
        await using HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(
            configuration, services => services.AddSingleton<TokenCredential>(credential));

        await Assert.ThrowsAsync<CredentialRefusedException>(() => hosted.Host.StartAsync());
        Assert.True(credential.Requests > 0);
        Assert.Contains("Azure Storage container 'https://account.blob.core.windows.net/store1'",
            Assert.Single(hosted.HostingLog(1000)).Message, StringComparison.Ordinal);
        Assert.True(hosted.Logged(1008));
    }

    /// <summary>
    /// A hosted store that runs and checkpoints, then hosts that fail to open with a wrong account key and with a SAS
    /// that may only read: no log line of any category and no exception holds the key, the wrong key or the SAS.
    /// </summary>
    [Fact]
    public async Task No_key_or_SAS_appears_in_the_logs_or_exceptions_of_a_hosted_store()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        var texts = new List<string>();

        await using (HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(HostedCountsOnAzure.InContainer(azurite, container)))
        {
            await hosted.Host.StartAsync();
            await hosted.Pool.RunDurableAsync(session =>
            {
                for (long key = 0; key < 1_000; key++)
                {
                    session.RMW(key, 1);
                }

                return 0;
            });
            await hosted.Host.StopAsync();
            texts.AddRange(hosted.LogText());
        }

        string wrongKey = Convert.ToBase64String(System.Security.Cryptography.RandomNumberGenerator.GetBytes(64));
        Dictionary<string, string?> wrong = HostedCountsOnAzure.InContainer(azurite, container);
        wrong["HybridKV:Azure:ConnectionString"] = azurite.ConnectionString.Replace(azurite.AccountKey, wrongKey, StringComparison.Ordinal);
        await using (HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(wrong))
        {
            texts.Add((await Assert.ThrowsAsync<StorageDeviceException>(() => hosted.Host.StartAsync())).ToString());
            texts.AddRange(hosted.LogText());
        }

        var sas = new AccountSasBuilder(AccountSasPermissions.Read | AccountSasPermissions.List,
            DateTimeOffset.UtcNow.AddHours(1), AccountSasServices.Blobs, AccountSasResourceTypes.All);
        string token = sas.ToSasQueryParameters(new StorageSharedKeyCredential(Azurite.AccountName, azurite.AccountKey)).ToString();
        Dictionary<string, string?> readOnly = HostedCountsOnAzure.InContainer(azurite, container);
        readOnly["HybridKV:Azure:ConnectionString"] = $"BlobEndpoint={azurite.BlobEndpoint};SharedAccessSignature={token}";
        await using (HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(readOnly))
        {
            texts.Add((await Assert.ThrowsAsync<StorageDeviceException>(() => hosted.Host.StartAsync())).ToString());
            texts.AddRange(hosted.LogText());
            Assert.Contains($"Azure Storage container '{azurite.BlobEndpoint}/{container}'",
                Assert.Single(hosted.HostingLog(1000)).Message, StringComparison.Ordinal);
        }

        string signature = Uri.UnescapeDataString(token.Split('&').Single(p => p.StartsWith("sig=", StringComparison.Ordinal))[4..]);
        Assert.True(texts.Count > 20, "too little was logged for the test to mean anything");
        Assert.Contains(texts, text => text.Contains("Lease", StringComparison.OrdinalIgnoreCase));
        AssertNoSecret(texts, azurite.AccountKey, wrongKey, signature, Uri.EscapeDataString(signature), token);
    }

    private static void AssertNoSecret(IEnumerable<string> texts, params string[] secrets)
    {
        foreach (string text in texts)
        {
            foreach (string secret in secrets)
            {
                Assert.False(text.Contains(secret, StringComparison.Ordinal), $"A secret appears in: {text}");
            }

            Assert.DoesNotContain("AccountKey=", text, StringComparison.Ordinal);
            Assert.DoesNotContain("SharedAccessSignature=", text, StringComparison.Ordinal);
        }
    }

    /// <summary>A token credential that counts the tokens asked of it and refuses them all, so that nothing reaches
    /// the network.</summary>
    private sealed class CountingCredential : TokenCredential
    {
        private int _requests;

        public int Requests => Volatile.Read(ref _requests);

        public override AccessToken GetToken(TokenRequestContext requestContext, CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref _requests);
            throw new CredentialRefusedException();
        }

        public override ValueTask<AccessToken> GetTokenAsync(TokenRequestContext requestContext, CancellationToken cancellationToken) =>
            new(GetToken(requestContext, cancellationToken));
    }

    private sealed class CredentialRefusedException : Exception
    {
        public CredentialRefusedException()
            : base("The test's credential gives no token.")
        {
        }
    }
}
