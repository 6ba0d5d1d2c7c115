using System.Text.Json;
using HybridKV.Azure.Tests.Leases;
using HybridKV.Azure.Tests.Support;
using HybridKV.Checkpoints;
using HybridKV.Devices;

namespace HybridKV.Azure.Tests.Faults;

/// <summary>Faults injected by an Azure SDK pipeline policy between the SDK and a real Azurite.</summary>
[Trait("Category", "Azure")]
public sealed class TransientFaultTests
{
    /// <summary>
    /// Every third page write or ranged read is answered 503 without reaching the service, every third other one
    /// reaches it but its answer is replaced by a 503 (so the retry writes the pages again), and the first few hang
    /// until the SDK's network timeout: all are retried, and every byte reads back as written.
    /// </summary>
    [Fact]
    public async Task Injected_503s_lost_answers_and_timeouts_are_retried_and_nothing_is_lost()
    {
        Azurite azurite = await Azurite.Instance;
        int seen = 0;
        int hangs = 0;
        var faults = new FaultPolicy(message =>
        {
            if (!FaultPolicy.IsPutPage(message) && !FaultPolicy.IsRangedRead(message))
            {
                return Fault.None;
            }

            int n = Interlocked.Increment(ref seen);
            if (n % 10 == 5 && Interlocked.Increment(ref hangs) <= 3)
            {
                return Fault.Hang;
            }

            return (n % 3) switch
            {
                0 => Fault.Unavailable,
                1 => Fault.AnswerLost,
                _ => Fault.None,
            };
        });
        await using AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(azurite.ConnectionString,
            Azurite.NewContainerName(), AzureStores.DeviceOptions(faults, segmentSize: 1L << 16) with
            {
                MaxRequestBytes = 8192,
            });

        byte[] model = new byte[4 << 16];
        var writes = new List<Task>();
        for (int i = 0; i < 16; i++)
        {
            byte[] data = OneWriterTests.Pattern(model.Length / 16, (byte)(i + 1));
            data.CopyTo(model, i * data.Length);
            writes.Add(device.WriteAsync((long)i * data.Length, data).AsTask());
        }

        await Task.WhenAll(writes);
        byte[] read = new byte[model.Length];
        await device.ReadAsync(0, read);
        Assert.Equal(model, read);
        Assert.True(faults.Unavailable > 0 && faults.AnswersLost > 0 && faults.Hangs == 3,
            $"injected {faults.Unavailable} 503s, {faults.AnswersLost} lost answers, {faults.Hangs} hangs");
    }

    /// <summary>A checkpoint written and verified while every third request to the container fails with 503.</summary>
    [Fact]
    public async Task A_checkpoint_is_written_and_verified_through_503s()
    {
        Azurite azurite = await Azurite.Instance;
        int seen = 0;
        var faults = new FaultPolicy(_ => Interlocked.Increment(ref seen) % 3 == 0 ? Fault.Unavailable : Fault.None);
        await using AzureCheckpointStore store = await AzureCheckpointStore.OpenAsync(
            azurite.ConnectionString, Azurite.NewContainerName(), AzureStores.CheckpointOptions(faults));
        var catalog = new CheckpointCatalog(store);
        byte[] part = OneWriterTests.Pattern(300_000, 9);
        CheckpointWriter writer = catalog.Begin();
        await writer.WritePartAsync("log", (stream, token) => stream.WriteAsync(part, token).AsTask());
        await writer.CommitAsync(JsonDocument.Parse("""{"v":1}""").RootElement);

        CheckpointSelection selection = await catalog.FindLatestCompleteAsync();
        Assert.Equal(writer.Token, selection.Manifest?.Token);
        Assert.Empty(selection.Skipped);
        Assert.True(faults.Unavailable > 3, $"only {faults.Unavailable} faults were injected");
    }

    /// <summary>A 400 is not transient: it fails the write at once, as a device error naming the blob and the range.</summary>
    [Fact]
    public async Task A_failure_that_is_not_transient_is_not_retried_and_surfaces_as_a_device_error()
    {
        Azurite azurite = await Azurite.Instance;
        int pageWrites = 0;
        var faults = new FaultPolicy(message =>
            FaultPolicy.IsPutPage(message) && Interlocked.Increment(ref pageWrites) == 1 ? Fault.BadRequest : Fault.None);
        string container = Azurite.NewContainerName();
        await using AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(
            azurite.ConnectionString, container, AzureStores.DeviceOptions(faults));

        var failed = await Assert.ThrowsAsync<StorageDeviceException>(
            async () => await device.WriteAsync(4096, OneWriterTests.Pattern(1024, 1)));
        Assert.True(failed.Message.Contains("failed: HTTP 400", StringComparison.Ordinal), failed.Message);
        Assert.Contains($"offset 4096 of '{azurite.BlobEndpoint}/{container}/hlog.0'", failed.Message, StringComparison.Ordinal);
        Assert.Equal(1, pageWrites);

        // The device goes on: the next write is not refused.
        await device.WriteAsync(4096, OneWriterTests.Pattern(1024, 1));
        Assert.Equal(2, pageWrites);
    }

    /// <summary>A service that answers 503 for ever: the write fails once the total time bound has passed, however
    /// many retries are allowed.</summary>
    [Fact]
    public async Task Transient_failures_that_outlast_the_total_time_bound_fail_the_request_clearly()
    {
        Azurite azurite = await Azurite.Instance;
        var faults = new FaultPolicy(message => FaultPolicy.IsPutPage(message) ? Fault.Unavailable : Fault.None);
        await using AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(azurite.ConnectionString,
            Azurite.NewContainerName(), AzureStores.DeviceOptions(faults) with
            {
                Retry = AzureStores.FastRetries with
                {
                    MaxRetries = 100,
                    NetworkTimeout = TimeSpan.FromMilliseconds(500),
                    MaxTotalTime = TimeSpan.FromSeconds(1),
                },
            });

        var failed = await Assert.ThrowsAsync<StorageDeviceException>(
            async () => await device.WriteAsync(0, new byte[512]));
        Assert.Contains("did not succeed within 00:00:01 (AzureRetryOptions.MaxTotalTime)", failed.Message,
            StringComparison.Ordinal);
        Assert.True(faults.Unavailable > 1, "the write was not retried");
    }
}
