using Azure.Storage.Blobs.Models;
using CountStore;
using HybridKV.Azure.Tests.Support;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.Logging.Testing;

namespace HybridKV.Azure.Tests.Hosting;

/// <summary>
/// A store added with <c>AddHybridKV(...).UseAzureStorage()</c> and configured from configuration alone: its log and
/// checkpoints in a container of the test run's Azurite, opened when the host starts and released when it stops.
/// </summary>
[Trait("Category", "Azure")]
public sealed class HostedStoreOnAzureTests
{
    private const int Keys = 3_000;

    /// <summary>
    /// Durable writes through the pool (3,000 keys, many times the store's 64 KiB of memory), the host stopped; a new
    /// host on the same container recovers them from Azure. It writes more durably and is disposed without stopping
    /// (no final checkpoint, as after a crash); a third host still reads every acknowledged write.
    /// </summary>
    [Fact]
    public async Task A_hosted_store_writes_durably_to_Azure_and_a_new_host_recovers_from_it()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        Dictionary<string, string?> configuration = HostedCountsOnAzure.InContainer(azurite, container);

        await using (HostedCountsOnAzure first = HostedCountsOnAzure.Build(configuration))
        {
            await first.Host.StartAsync();
            Assert.True(first.Logged(1002)); // started empty
            for (long key = 0; key < Keys; key += 100)
            {
                long from = key;
                await first.Pool.RunDurableAsync(session =>
                {
                    for (long k = from; k < from + 100; k++)
                    {
                        session.Upsert(k, k * 3);
                    }

                    return 0;
                });
            }

            Assert.True(first.Pool.Store.HeadAddress > 0, "nothing was evicted to the page blobs");
            await first.Host.StopAsync();
            Assert.True(first.Logged(1006)); // stopped with everything durable
            FakeLogRecord opening = Assert.Single(first.HostingLog(1000));
            Assert.Contains($"Azure Storage container '{azurite.BlobEndpoint}/{container}'", opening.Message,
                StringComparison.Ordinal);
        }

        // The log and the checkpoints are blobs in the container, not files.
        List<string> blobs = [];
        await foreach (BlobItem blob in azurite.Container(container).GetBlobsAsync())
        {
            blobs.Add(blob.Name);
        }

        Assert.Contains("hlog.0", blobs);
        Assert.Contains("hlog.label", blobs);
        Assert.Contains(blobs, name => name.StartsWith("checkpoints/", StringComparison.Ordinal) &&
                                       name.EndsWith("/manifest.json", StringComparison.Ordinal));

        await using (HostedCountsOnAzure second = HostedCountsOnAzure.Build(configuration))
        {
            await second.Host.StartAsync();
            Assert.True(second.Logged(1001)); // recovered from a checkpoint
            await AssertValuesAsync(second, key => key * 3);
            await second.Pool.RunDurableAsync(session =>
            {
                for (long key = 0; key < Keys; key += 2)
                {
                    session.RMW(key, 1);
                }

                return 0;
            });

            // Disposed without StopAsync: no final checkpoint; only what RunDurableAsync acknowledged is in Azure.
        }

        await using (HostedCountsOnAzure third = HostedCountsOnAzure.Build(configuration))
        {
            await third.Host.StartAsync();
            await AssertValuesAsync(third, key => (key * 3) + (key % 2 == 0 ? 1 : 0));
            await third.Host.StopAsync();
        }
    }

    /// <summary>With UseAzureStorage() but no Azure settings, the store keeps its local directory: nothing in Azure.</summary>
    [Fact]
    public async Task Without_Azure_settings_the_store_stays_in_its_directory()
    {
        string directory = Path.Combine(Path.GetTempPath(), "hybridkv-azure-hosting-" + Guid.NewGuid().ToString("N"));
        try
        {
            Dictionary<string, string?> configuration = HostedCountsOnAzure.SmallStore();
            configuration["HybridKV:Directory"] = directory;
            await using (HostedCountsOnAzure hosted = HostedCountsOnAzure.Build(configuration))
            {
                await hosted.Host.StartAsync();
                await hosted.Pool.RunDurableAsync(session => session.Upsert(1, 42));
                await hosted.Host.StopAsync();
                FakeLogRecord opening = Assert.Single(hosted.HostingLog(1000));
                Assert.Contains(directory, opening.Message, StringComparison.Ordinal);
                Assert.DoesNotContain(hosted.Logs.GetSnapshot(), r => r.Category?.StartsWith("HybridKV.Azure", StringComparison.Ordinal) == true);
            }

            Assert.NotEmpty(Directory.GetFiles(Path.Combine(directory, "log")));
            Assert.NotEmpty(Directory.GetDirectories(Path.Combine(directory, "checkpoints")));
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    /// <summary>A second host on a container whose store is running is refused (the blob lease), naming the
    /// container; the first keeps running.</summary>
    [Fact]
    public async Task A_second_host_on_the_same_container_is_refused()
    {
        Azurite azurite = await Azurite.Instance;
        Dictionary<string, string?> configuration = HostedCountsOnAzure.InContainer(azurite, Azurite.NewContainerName());
        await using HostedCountsOnAzure first = HostedCountsOnAzure.Build(configuration);
        await first.Host.StartAsync();
        await using (HostedCountsOnAzure second = HostedCountsOnAzure.Build(configuration))
        {
            BlobStoreInUseException refused = await Assert.ThrowsAsync<BlobStoreInUseException>(() => second.Host.StartAsync());
            Assert.Contains(azurite.BlobEndpoint.ToString(), refused.Container, StringComparison.Ordinal);
            Assert.True(second.Logged(1008)); // could not be opened
        }

        await first.Pool.RunDurableAsync(session => session.Upsert(7, 7));
        await first.Host.StopAsync();
    }

    private static async Task AssertValuesAsync(HostedCountsOnAzure hosted, Func<long, long> expected)
    {
        for (long key = 0; key < Keys; key++)
        {
            long k = key;
            ReadResult<long> read = await hosted.Pool.RunAsync((session, token) => session.ReadAsync(k, cancellationToken: token));
            Assert.Equal(Status.Ok, read.Status);
            Assert.Equal(expected(k), read.Output);
        }
    }
}
