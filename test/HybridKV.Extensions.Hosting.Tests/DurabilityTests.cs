using HybridKV.Devices;
using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>Commit on demand: durable writes are acknowledged only once a checkpoint holds them, and share checkpoints.</summary>
[Trait("Category", "Hosting")]
public sealed class DurabilityTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task An_acknowledged_durable_write_survives_a_crash_right_after_it()
    {
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory);
        await hosted.Pool.RunAsync(session => session.RMW(1, 1));
        await hosted.Pool.RunDurableAsync(session => session.RMW(2, 5));

        // The files as they are now, with the host still running and no final checkpoint: what a crash leaves.
        string crashed = _directory.CopyOf(directory);
        await using HostedCounters recovered = await HostedCounters.StartAsync(crashed);
        Assert.Equal(5, await recovered.ReadAsync(2));
        // The plain write before it was issued earlier on a pooled session: the checkpoint holds it too.
        Assert.Equal(1, await recovered.ReadAsync(1));
    }

    [Fact]
    public async Task A_lease_commits_what_its_session_did_and_hands_the_session_back_only_once()
    {
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory);
        SessionLease<Counters.Session> lease = await hosted.Pool.RentAsync();
        await using (lease)
        {
            Counters.Session session = lease.Session;
            session.RMW(9, 4);
            await session.RMWAsync(9, 5);
            await lease.CommitAsync();
            Assert.Equal(session.LastSerialNo, session.DurableCommitPoint.UntilSerialNo);
            Assert.Equal(1, hosted.Pool.RentedCount);
        }

        Assert.Equal(0, hosted.Pool.RentedCount);
        await lease.DisposeAsync();
        Assert.Equal(0, hosted.Pool.RentedCount);
        Assert.Throws<ObjectDisposedException>(() => lease.Session);
        await Assert.ThrowsAsync<ObjectDisposedException>(() => lease.CommitAsync());

        await using HostedCounters recovered = await HostedCounters.StartAsync(_directory.CopyOf(directory));
        Assert.Equal(9, await recovered.ReadAsync(9));
    }

    [Fact]
    public async Task A_write_not_asked_to_be_durable_is_not_committed_by_itself()
    {
        string directory = _directory.NewSubdirectory();
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory);
        await hosted.Pool.RunDurableAsync(session => session.RMW(1, 1));
        await hosted.Pool.RunAsync(session => session.RMW(1, 100));
        Assert.True(hosted.Pool.Store.HasUncommittedOperations);

        string crashed = _directory.CopyOf(directory);
        await using HostedCounters recovered = await HostedCounters.StartAsync(crashed);
        Assert.Equal(1, await recovered.ReadAsync(1));

        // CommitAsync makes everything acknowledged before it durable.
        await hosted.Pool.CommitAsync();
        Assert.False(hosted.Pool.Store.HasUncommittedOperations);
        await using HostedCounters again = await HostedCounters.StartAsync(_directory.CopyOf(directory));
        Assert.Equal(101, await again.ReadAsync(1));
    }

    [Fact]
    public async Task Requests_arriving_while_a_checkpoint_runs_share_the_next_one()
    {
        string directory = _directory.NewSubdirectory();
        using var device = new FaultInjectingDevice(new LocalFileDevice(new LocalFileDeviceOptions
        {
            Directory = Path.Combine(directory, "log"),
            SegmentSize = 1 << 20,
        }));
        const int Writers = 64;
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory, options =>
        {
            // A session for every writer: each durable write then runs on the calling thread up to its request.
            options.SessionPoolSize = Writers + 1;
            options.MaxSessions = Writers + 8;
            options.ConfigureStore = settings => settings with
            {
                LogDirectory = null,
                LogDevice = device,
                CheckpointDirectory = Path.Combine(directory, "checkpoints"),
            };
        });
        CommitScheduler commits = hosted.StoreHost.Commits!;

        // The first checkpoint stops at its device flush, after writing the log: still running while the others ask.
        var holdFlushes = new TaskCompletionSource();
        var logWritten = new TaskCompletionSource();
        device.HoldFlushes = holdFlushes.Task;
        device.FailWrite = _ =>
        {
            logWritten.TrySetResult();
            return false;
        };
        Task first = hosted.Pool.RunDurableAsync(session => session.RMW(0, 1));
        await logWritten.Task;
        Task[] writes = Enumerable.Range(1, Writers)
            .Select(key => hosted.Pool.RunDurableAsync(session => session.RMW(key, key)))
            .ToArray();
        Assert.False(first.IsCompleted);
        Assert.DoesNotContain(writes, w => w.IsCompleted);

        device.HoldFlushes = null;
        holdFlushes.SetResult();
        await first;
        await Task.WhenAll(writes);
        Assert.Equal(2, commits.CheckpointCount);
        Assert.False(hosted.Pool.Store.HasUncommittedOperations);
    }

    [Fact]
    public async Task A_failed_checkpoint_fails_the_durable_write_and_the_health_check()
    {
        string directory = _directory.NewSubdirectory();
        using var device = new FaultInjectingDevice(new LocalFileDevice(new LocalFileDeviceOptions
        {
            Directory = Path.Combine(directory, "log"),
            SegmentSize = 1 << 20,
        }));
        await using HostedCounters hosted = await HostedCounters.StartAsync(directory, options => options.ConfigureStore =
            settings => settings with
            {
                LogDirectory = null,
                LogDevice = device,
                CheckpointDirectory = Path.Combine(directory, "checkpoints"),
            });
        Assert.Equal(HealthStatus.Healthy, (await hosted.CheckHealthAsync()).Status);
        await hosted.Pool.RunDurableAsync(session => session.Upsert(1, 1));

        device.FailWrite = _ => true;
        await Assert.ThrowsAsync<StorageDeviceException>(
            () => hosted.Pool.RunDurableAsync(session => session.Upsert(1, 1)));
        HealthReport health = await hosted.CheckHealthAsync();
        Assert.Equal(HealthStatus.Unhealthy, health.Status);
        Assert.Contains(hosted.Logs.GetSnapshot(), r => r.Id.Id == 1003);

        // The log cannot be written any more (the store says so until reopened): no later write is acknowledged either.
        device.FailWrite = null;
        await Assert.ThrowsAnyAsync<Exception>(() => hosted.Pool.RunDurableAsync(session => session.Upsert(1, 3)));
        health = await hosted.CheckHealthAsync();
        Assert.Equal(HealthStatus.Unhealthy, health.Status);
        Assert.NotNull(hosted.Pool.Store.DeviceError);
    }
}
