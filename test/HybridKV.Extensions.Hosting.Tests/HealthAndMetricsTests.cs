using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using System.Diagnostics.Metrics;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>The health check, the meters (through the host's meter factory) and the logging of an idle store.</summary>
[Trait("Category", "Hosting")]
public sealed class HealthAndMetricsTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Health_is_unhealthy_until_recovered_then_healthy_then_degraded_when_commits_lag()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UnixEpoch.AddYears(50));
        string directory = _directory.NewSubdirectory();
        // An allowed lag shorter than the checkpoint interval: the clock passes it before the periodic checkpoint is
        // due, so no checkpoint can commit (and end the lag) between the advance and the check. With the default
        // (three intervals) the advance fired the periodic checkpoint, which sometimes committed first; the default is
        // tested with commits held (By_default_health_is_degraded_once_writes_wait_three_checkpoint_intervals).
        HostedCounters hosted = HostedCounters.Build(directory, options => options.CheckpointInterval = TimeSpan.FromMinutes(1),
            time: time, maxCommitLag: TimeSpan.FromSeconds(30));
        await using (hosted)
        {
            HealthReport before = await hosted.CheckHealthAsync();
            Assert.Equal(HealthStatus.Unhealthy, before.Status);

            await hosted.Host.StartAsync();
            HealthReport started = await hosted.CheckHealthAsync();
            Assert.Equal(HealthStatus.Healthy, started.Status);
            Assert.Equal(false, started.Entries["hybridkv"].Data["recovered"]);

            // A write not yet durable, and more than the allowed lag passes on the clock without a commit.
            await hosted.Pool.RunAsync(session => session.RMW(1, 1));
            time.Advance(TimeSpan.FromSeconds(31));
            HealthReport lagging = await hosted.CheckHealthAsync();
            Assert.Equal(HealthStatus.Degraded, lagging.Status);
            Assert.True((double)lagging.Entries["hybridkv"].Data["commitLagSeconds"] > 30);
            Assert.Equal(0L, lagging.Entries["hybridkv"].Data["checkpoints"]);

            await hosted.Pool.CommitAsync();
            Assert.Equal(HealthStatus.Healthy, (await hosted.CheckHealthAsync()).Status);
            await hosted.Host.StopAsync();
            Assert.Equal(HealthStatus.Unhealthy, (await hosted.CheckHealthAsync()).Status);
        }

        await using HostedCounters restarted = await HostedCounters.StartAsync(directory);
        HealthReport recovered = await restarted.CheckHealthAsync();
        Assert.Equal(HealthStatus.Healthy, recovered.Status);
        Assert.Equal(true, recovered.Entries["hybridkv"].Data["recovered"]);
    }

    [Fact]
    public async Task By_default_health_is_degraded_once_writes_wait_three_checkpoint_intervals()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UnixEpoch.AddYears(50));
        using var device = new MemoryDevice(segmentSize: 1L << 20);
        var commits = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var provider = new HeldCommitsProvider(device, _directory.NewSubdirectory(), commits.Task);
        await using HostedCounters hosted = HostedCounters.Build(null, options =>
        {
            options.StorageProvider = provider;
            options.CheckpointInterval = TimeSpan.FromMinutes(1);
        }, time: time);
        try
        {
            await hosted.Host.StartAsync();

            // The periodic checkpoints the clock fires cannot commit while their manifests are held: the write waits.
            await hosted.Pool.RunAsync(session => session.RMW(1, 1));
            time.Advance(TimeSpan.FromMinutes(2) + TimeSpan.FromSeconds(59));
            Assert.Equal(HealthStatus.Healthy, (await hosted.CheckHealthAsync()).Status);
            time.Advance(TimeSpan.FromSeconds(2));
            HealthReport lagging = await hosted.CheckHealthAsync();
            Assert.Equal(HealthStatus.Degraded, lagging.Status);
            Assert.Contains("more than 180", lagging.Entries["hybridkv"].Description, StringComparison.Ordinal);
        }
        finally
        {
            // Before the host stops, which waits for the checkpoint in progress.
            commits.TrySetResult();
        }

        await hosted.Pool.CommitAsync();
        Assert.Equal(HealthStatus.Healthy, (await hosted.CheckHealthAsync()).Status);
    }

    /// <summary>A memory device and a checkpoint store whose commits wait for <paramref name="commits"/>.</summary>
    private sealed class HeldCommitsProvider(MemoryDevice device, string checkpoints, Task commits) : IHybridKVStorageProvider
    {
        public string Description => "held commits";

        public IReadOnlyList<string> Validate(HybridKVOptions options) => [];

        public Task<HybridKVStorage> OpenAsync(HybridKVOptions options, ILoggerFactory loggerFactory, CancellationToken cancellationToken)
        {
            var store = new HeldCommitStore(new LocalCheckpointStore(checkpoints), commits);
            return Task.FromResult(new HybridKVStorage(device, store, () =>
            {
                store.Dispose();
                return ValueTask.CompletedTask;
            }));
        }
    }

    private sealed class HeldCommitStore(CheckpointStore inner, Task commits) : DelegatingCheckpointStore(inner, ownsInner: true)
    {
        public override async Task CommitAsync(Guid token, ReadOnlyMemory<byte> manifest, CancellationToken cancellationToken)
        {
            await commits.WaitAsync(cancellationToken);
            await base.CommitAsync(token, manifest, cancellationToken);
        }
    }

    [Fact]
    public async Task An_idle_store_takes_no_checkpoint_and_logs_nothing_per_tick_while_a_busy_one_checkpoints_periodically()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UnixEpoch.AddYears(50));
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory,
            options => options.CheckpointInterval = TimeSpan.FromSeconds(10), time);
        CommitScheduler commits = hosted.StoreHost.Commits!;
        int logsAfterStart = hosted.Logs.Count;

        await AdvanceUntilAsync(time, () => commits.IdleTicks >= 5);
        Assert.Equal(0, commits.CheckpointCount);
        Assert.Equal(logsAfterStart, hosted.Logs.Count);

        await hosted.Pool.RunAsync(session => session.RMW(1, 1));
        // Logged at Debug once the checkpoint is durable.
        await AdvanceUntilAsync(time, () => hosted.Logs.GetSnapshot().Any(r => r.Id.Id == 1004));
        Assert.Equal(1, commits.CheckpointCount);
        Assert.Equal(LogLevel.Debug, hosted.Logs.GetSnapshot().Single(r => r.Id.Id == 1004).Level);
        Assert.False(hosted.Pool.Store.HasUncommittedOperations);
    }

    [Fact]
    public async Task Meters_are_created_through_the_hosts_meter_factory_and_report_checkpoints_and_sizes()
    {
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory);
        var factory = hosted.Host.Services.GetRequiredService<IMeterFactory>();
        using var duration = new MetricCollector<double>(factory, HostingMetrics.MeterName, "hybridkv.checkpoint.duration");
        using var size = new MetricCollector<long>(factory, HostingMetrics.MeterName, "hybridkv.checkpoint.size");
        using var operations = new MetricCollector<long>(factory, HostingMetrics.MeterName, "hybridkv.operations");
        using var logSize = new MetricCollector<long>(factory, HostingMetrics.MeterName, "hybridkv.log.size");
        using var indexSize = new MetricCollector<long>(factory, HostingMetrics.MeterName, "hybridkv.index.size");
        using var waits = new MetricCollector<double>(factory, HostingMetrics.MeterName, "hybridkv.commit.wait");

        for (int i = 0; i < 10; i++)
        {
            await hosted.Pool.RunAsync(session => session.Upsert(i, i));
        }

        await hosted.Pool.RunDurableAsync(session => session.Upsert(100, 1));
        // The write is durable once the store's commit reaches its session, which can be before the scheduler, still
        // finishing that checkpoint, records it.
        await duration.WaitForMeasurementsAsync(1, TimeSpan.FromMinutes(1));
        await size.WaitForMeasurementsAsync(1, TimeSpan.FromMinutes(1));
        Assert.Equal("requested", Assert.Single(duration.GetMeasurementSnapshot()).Tags["hybridkv.checkpoint.reason"]);
        Assert.Equal("full", duration.LastMeasurement!.Tags["hybridkv.checkpoint.kind"]);
        Assert.True(size.LastMeasurement!.Value >= 1024 * 64, "a full checkpoint writes the index");
        Assert.Single(waits.GetMeasurementSnapshot());

        operations.RecordObservableInstruments();
        logSize.RecordObservableInstruments();
        indexSize.RecordObservableInstruments();
        Assert.Equal(11, operations.LastMeasurement!.Value);
        Assert.Equal(hosted.Pool.Store.TailAddress - hosted.Pool.Store.BeginAddress, logSize.LastMeasurement!.Value);
        Assert.Equal(1024 * 64, indexSize.LastMeasurement!.Value);
        Assert.Contains(new KeyValuePair<string, object?>("hybridkv.store", typeof(Counters.Store).FullName),
            indexSize.Instrument!.Meter.Tags!);
    }

    /// <summary>Moves the fake clock a second at a time until the scheduler has done what is awaited.</summary>
    private static async Task AdvanceUntilAsync(FakeTimeProvider time, Func<bool> done)
    {
        using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(1));
        while (!done())
        {
            time.Advance(TimeSpan.FromSeconds(1));
            await Task.Delay(1, deadline.Token);
        }
    }
}
