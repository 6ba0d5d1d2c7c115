using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>
/// A storage provider (<see cref="HybridKVOptions.StorageProvider"/>) instead of a directory: its device and checkpoint
/// store are opened when the host starts, handed to the store, and disposed once, after the store, when the host stops
/// or fails to start.
/// </summary>
[Trait("Category", "Hosting")]
public sealed class StorageProviderTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task The_provider_is_opened_at_start_disposed_at_stop_and_a_new_host_recovers_from_it()
    {
        using var device = new MemoryDevice(segmentSize: 1L << 20);
        var provider = new RecordingProvider(device, _directory.NewSubdirectory());
        await using (HostedCounters first = HostedCounters.Build(null, options => options.StorageProvider = provider))
        {
            await first.Host.StartAsync();
            Assert.Equal(1, provider.Opened);
            Assert.Equal(0, provider.Disposed);
            Counters.Store running = first.Pool.Store;
            provider.StoreProbe = () => running.NewSession().Dispose();
            await first.Pool.RunDurableAsync(session => session.RMW(5, 37));
            await first.Host.StopAsync();
            Assert.Equal(1, provider.Disposed);
            Assert.True(provider.StoreClosedBeforeDispose, "the storage was disposed while the store still used it");
            Assert.Contains(first.Logs.GetSnapshot(), r => r.Id.Id == 1000 && r.Message.Contains("recording storage", StringComparison.Ordinal));
        }

        Assert.Equal(1, provider.Disposed);
        await using (HostedCounters second = HostedCounters.Build(null, options => options.StorageProvider = provider))
        {
            await second.Host.StartAsync();
            provider.StoreProbe = null;
            Assert.NotNull(second.StoreHost.Recovery);
            Assert.Equal(37, await second.Pool.RunAsync(
                async (session, token) => (await session.ReadAsync(5, cancellationToken: token)).Output));
            await second.Host.StopAsync();
        }

        Assert.Equal(2, provider.Opened);
        Assert.Equal(2, provider.Disposed);
    }

    /// <summary>The store refuses the provider's device (a sector larger than a page): the host does not start, and the
    /// storage is disposed at once.</summary>
    [Fact]
    public async Task Storage_the_store_refuses_is_disposed_when_the_host_fails_to_start()
    {
        using var device = new MemoryDevice(sectorSize: 1 << 16, segmentSize: 1L << 20);
        var provider = new RecordingProvider(device, _directory.NewSubdirectory());
        await using HostedCounters hosted = HostedCounters.Build(null, options => options.StorageProvider = provider);
        ArgumentOutOfRangeException error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => hosted.Host.StartAsync());
        Assert.Equal(nameof(StoreSettings.LogDevice), error.ParamName);
        Assert.Equal(1, provider.Opened);
        Assert.Equal(1, provider.Disposed);
        Assert.Contains(hosted.Logs.GetSnapshot(), r => r.Id.Id == 1008 && r.Level == LogLevel.Critical);
    }

    [Fact]
    public async Task A_directory_together_with_a_provider_stops_the_host_naming_both()
    {
        using var device = new MemoryDevice(segmentSize: 1L << 20);
        var provider = new RecordingProvider(device, _directory.NewSubdirectory()) { Failures = ["RecordingProvider.Setting is wrong."] };
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = HostedCounters.Build(directory, options => options.StorageProvider = provider);
        OptionsValidationException error = await Assert.ThrowsAsync<OptionsValidationException>(() => hosted.Host.StartAsync());
        Assert.Contains($"HybridKVOptions.Directory is '{directory}', but the store's log and checkpoints go to recording storage",
            error.Message, StringComparison.Ordinal);
        Assert.Contains("RecordingProvider.Setting is wrong.", error.Failures);
        Assert.Equal(0, provider.Opened);
    }

    /// <summary>A provider over a memory device (kept across hosts, as a remote store would be) and a local checkpoint
    /// store, counting what the host does with it.</summary>
    private sealed class RecordingProvider(MemoryDevice device, string checkpoints) : IHybridKVStorageProvider
    {
        public int Opened { get; private set; }

        public int Disposed { get; private set; }

        public bool StoreClosedBeforeDispose { get; private set; } = true;

        public IReadOnlyList<string> Failures { get; init; } = [];

        /// <summary>Opens a session of the running store (set by the test).</summary>
        public Action? StoreProbe { get; set; }

        public string Description => "recording storage";

        public IReadOnlyList<string> Validate(HybridKVOptions options) => Failures;

        public Task<HybridKVStorage> OpenAsync(HybridKVOptions options, ILoggerFactory loggerFactory, CancellationToken cancellationToken)
        {
            Opened++;
            var store = new LocalCheckpointStore(checkpoints);
            return Task.FromResult(new HybridKVStorage(device, store, () =>
            {
                Disposed++;

                store.Dispose();
                try
                {
                    // Throws once the store is disposed, as it must be before its storage is.
                    StoreProbe?.Invoke();
                    StoreClosedBeforeDispose = false;
                }
                catch (ObjectDisposedException)
                {
                }

                return ValueTask.CompletedTask;
            }));
        }
    }
}
