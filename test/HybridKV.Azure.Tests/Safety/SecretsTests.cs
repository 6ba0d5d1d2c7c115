using Azure;
using Azure.Storage;
using Azure.Storage.Sas;
using HybridKV.Azure.Tests.Leases;
using HybridKV.Azure.Tests.Support;
using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Tests.Support;

namespace HybridKV.Azure.Tests.Safety;

[Trait("Category", "Azure")]
public sealed class SecretsTests
{
    /// <summary>
    /// Everything the package logs and throws, on success and on failure, with an account key and with a SAS token:
    /// a store that checkpoints, a second writer refused, a writer that lost its lease, a wrong key, a SAS that may
    /// only read. No line and no exception (nor any exception inside it) holds the key, the wrong key or the SAS.
    /// </summary>
    [Fact]
    public async Task No_account_key_or_SAS_token_appears_in_any_log_line_or_exception()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        var logs = new CollectingLoggerFactory();
        var errors = new List<Exception>();
        async Task Expect<TException>(Func<Task> action)
            where TException : Exception => errors.Add(await Assert.ThrowsAnyAsync<TException>(action));

        await using (AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(
                         azurite.ConnectionString, container, AzureStores.DeviceOptions(), logs))
        await using (AzureCheckpointStore checkpoints = await AzureCheckpointStore.OpenAsync(
                         azurite.ConnectionString, container, AzureStores.CheckpointOptions(), logs))
        {
            using (var store = new CountStore.Counts.Store(AzureStores.Settings(device, checkpoints, logs)))
            {
                using var session = store.NewSession();
                for (long key = 0; key < 2_000; key++)
                {
                    await session.RMWAsync(key, 1);
                }

                await store.TakeCheckpointAsync();
            }

            await Expect<BlobStoreInUseException>(() => AzurePageBlobDevice.OpenAsync(
                azurite.ConnectionString, container, AzureStores.DeviceOptions(), logs));
            await Expect<BlobStoreInUseException>(() => AzureCheckpointStore.OpenAsync(
                azurite.ConnectionString, container, AzureStores.CheckpointOptions(), logs));
        }

        string wrongKey = Convert.ToBase64String(System.Security.Cryptography.RandomNumberGenerator.GetBytes(64));
        string wrongConnection = azurite.ConnectionString.Replace(azurite.AccountKey, wrongKey, StringComparison.Ordinal);
        await Expect<StorageDeviceException>(() => AzurePageBlobDevice.OpenAsync(
            wrongConnection, container, AzureStores.DeviceOptions(), logs));
        await Expect<IOException>(() => AzureCheckpointStore.OpenAsync(
            wrongConnection, container, AzureStores.CheckpointOptions(), logs));

        // A SAS that may read and list but not write: opening (which creates the lease blob) is refused.
        var sas = new AccountSasBuilder(AccountSasPermissions.Read | AccountSasPermissions.List,
            DateTimeOffset.UtcNow.AddHours(1), AccountSasServices.Blobs, AccountSasResourceTypes.All);
        string token = sas.ToSasQueryParameters(new StorageSharedKeyCredential(Azurite.AccountName, azurite.AccountKey))
            .ToString();
        string sasConnection = $"BlobEndpoint={azurite.BlobEndpoint};SharedAccessSignature={token}";
        await Expect<StorageDeviceException>(() => AzurePageBlobDevice.OpenAsync(
            sasConnection, container, AzureStores.DeviceOptions() with { CreateContainer = false }, logs));
        string signature = Uri.UnescapeDataString(token.Split('&').Single(p => p.StartsWith("sig=", StringComparison.Ordinal))[4..]);

        Assert.True(logs.Entries.Count > 5, "too little was logged for the test to mean anything");
        Assert.Equal(5, errors.Count);
        string[] secrets = [azurite.AccountKey, wrongKey, signature, Uri.EscapeDataString(signature), token];
        foreach (string text in logs.Entries.Select(e => e.Message + e.Error).Concat(errors.Select(e => e.ToString())))
        {
            foreach (string secret in secrets)
            {
                Assert.False(text.Contains(secret, StringComparison.Ordinal), $"A secret appears in: {text}");
            }

            Assert.DoesNotContain("AccountKey=", text, StringComparison.Ordinal);
            Assert.DoesNotContain("SharedAccessSignature=", text, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void Invalid_options_and_locations_are_refused_naming_the_setting_without_quoting_a_query()
    {
        Assert.Equal("SegmentSize", Assert.Throws<ArgumentOutOfRangeException>(
            () => new AzurePageBlobDeviceOptions { SegmentSize = 1000 }.Validate()).ParamName);
        Assert.Equal("MaxRequestBytes", Assert.Throws<ArgumentOutOfRangeException>(
            () => new AzurePageBlobDeviceOptions { MaxRequestBytes = 5 << 20 }.Validate()).ParamName);
        Assert.Equal("Duration", Assert.Throws<ArgumentOutOfRangeException>(
            () => new AzurePageBlobDeviceOptions { Lease = new() { Duration = TimeSpan.FromSeconds(5) } }.Validate()).ParamName);
        Assert.Equal("MaxTotalTime", Assert.Throws<ArgumentOutOfRangeException>(
            () => new AzureCheckpointStoreOptions { Retry = new() { MaxTotalTime = TimeSpan.FromSeconds(1) } }.Validate()).ParamName);
        Assert.Equal("BlobPrefix", Assert.Throws<ArgumentException>(
            () => new AzureCheckpointStoreOptions { BlobPrefix = "/x" }.Validate()).ParamName);
        Assert.Equal("containerName", Assert.Throws<ArgumentException>(
            () => AzureBlobLocation.FromConnectionString("UseDevelopmentStorage=true", "Not_Valid")).ParamName);

        var withSas = new Uri("https://account.blob.core.windows.net/container?sv=2025-01-01&sig=c2VjcmV0");
        var refused = Assert.Throws<ArgumentException>(
            () => AzureBlobLocation.FromUri(withSas, global::Azure.Core.DelegatedTokenCredential.Create((_, _) => new global::Azure.Core.AccessToken("unused", DateTimeOffset.MaxValue))));
        Assert.DoesNotContain("sig=", refused.Message, StringComparison.Ordinal);
        Assert.Contains("https://account.blob.core.windows.net/container", refused.Message, StringComparison.Ordinal);
    }
}
