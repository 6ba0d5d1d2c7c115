using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Extensions.Hosting.Tests.Support;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>A real host started and stopped over real files: recovery before serving, drain and final checkpoint.</summary>
[Trait("Category", "Hosting")]
public sealed class LifecycleTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task A_restarted_host_recovers_values_and_continues_the_pooled_sessions_under_the_same_ids()
    {
        string directory = _directory.NewSubdirectory();
        IReadOnlyList<Guid> firstIds;
        await using (HostedCounters first = await HostedCounters.StartAsync(directory))
        {
            Assert.Null(first.StoreHost.Recovery);
            Assert.All(first.Pool.RecoveredCommitPoints.Values, point => Assert.Equal(CommitPoint.None, point));
            for (int i = 0; i < 20; i++)
            {
                await first.Pool.RunAsync(session => session.RMW(i % 5, 10));
            }

            firstIds = first.Pool.SessionIds.ToArray();
            // Not committed yet: the final checkpoint on stop makes them durable.
            Assert.True(first.Pool.Store.HasUncommittedOperations);
        }

        await using HostedCounters second = await HostedCounters.StartAsync(directory);
        Assert.NotNull(second.StoreHost.Recovery);
        Assert.Equal(firstIds, second.Pool.SessionIds);
        Assert.Equal(20, second.Pool.RecoveredCommitPoints.Values.Sum(p => p.UntilSerialNo));
        for (int key = 0; key < 5; key++)
        {
            Assert.Equal(40, await second.ReadAsync(key));
        }

        // Serial numbers go on after the recovered ones: the sessions were continued, not started over.
        long last = await second.Pool.RunAsync(session =>
        {
            session.RMW(0, 1);
            return session.LastSerialNo;
        });
        Assert.True(last > second.Pool.RecoveredCommitPoints.Values.Min(p => p.UntilSerialNo));
    }

    [Fact]
    public async Task The_store_is_recovered_before_any_hosted_service_starts()
    {
        string directory = _directory.NewSubdirectory();
        await using (HostedCounters first = await HostedCounters.StartAsync(directory))
        {
            await first.Pool.RunDurableAsync(session => session.Upsert(1, 99));
        }

        // Registered before the store: hosted services start in registration order, yet it finds the store recovered.
        HostedCounters second = HostedCounters.Build(directory, servicesBefore: services =>
        {
            services.AddSingleton<ProbeService>();
            services.AddHostedService(sp => sp.GetRequiredService<ProbeService>());
        });
        await using (second)
        {
            await second.Host.StartAsync();
            ProbeService probe = second.Host.Services.GetRequiredService<ProbeService>();
            Assert.True(probe.StoreWasOpen);
            Assert.Equal(99, probe.ValueAtStart);
        }
    }

    [Fact]
    public async Task A_second_host_on_the_same_directory_is_refused_and_reports_unhealthy()
    {
        string directory = _directory.NewSubdirectory();
        await using HostedCounters first = await HostedCounters.StartAsync(directory);
        HostedCounters second = HostedCounters.Build(directory);
        await using (second)
        {
            await Assert.ThrowsAsync<DirectoryInUseException>(() => second.Host.StartAsync());
            HealthReport health = await second.CheckHealthAsync();
            Assert.Equal(HealthStatus.Unhealthy, health.Status);
            Assert.IsType<DirectoryInUseException>(health.Entries["hybridkv"].Exception);
            InvalidOperationException refused = await Assert.ThrowsAsync<InvalidOperationException>(
                async () => await second.Pool.RentAsync());
            Assert.IsType<DirectoryInUseException>(refused.InnerException);
        }

        // The first host was not disturbed.
        await first.Pool.RunDurableAsync(session => session.RMW(1, 1));
        Assert.Equal(1, await first.ReadAsync(1));
    }

    [Fact]
    public async Task Stopping_waits_for_rented_sessions_then_takes_the_final_checkpoint_and_refuses_new_work()
    {
        string directory = _directory.NewSubdirectory();
        HostedCounters hosted = await HostedCounters.StartAsync(directory);
        SessionLease<Counters.Session> lease = await hosted.Pool.RentAsync();
        lease.Session.RMW(3, 7);
        Task stopping = hosted.Host.StopAsync();
        Assert.False(stopping.IsCompleted);

        // The lease still works while the host drains; a new rent is refused.
        lease.Session.RMW(3, 1);
        await Assert.ThrowsAsync<InvalidOperationException>(async () => await hosted.Pool.RentAsync());
        await lease.DisposeAsync();
        Assert.Throws<ObjectDisposedException>(() => lease.Session);
        await stopping;
        Assert.Contains(hosted.Logs.GetSnapshot(), r => r.Id.Id == 1006);
        hosted.Host.Dispose();

        await using HostedCounters restarted = await HostedCounters.StartAsync(directory);
        Assert.Equal(8, await restarted.ReadAsync(3));
    }

    [Fact]
    public async Task A_shutdown_timeout_shorter_than_a_rented_session_closes_the_store_anyway()
    {
        string directory = _directory.NewSubdirectory();
        HostedCounters hosted = await HostedCounters.StartAsync(directory);
        await hosted.Pool.RunDurableAsync(session => session.Upsert(5, 50));
        SessionLease<Counters.Session> lease = await hosted.Pool.RentAsync();
        lease.Session.Upsert(5, 51);
        Guid writer = lease.Session.Id;
        long unacknowledged = lease.Session.LastSerialNo;
        using (var timeout = new CancellationTokenSource())
        {
            await timeout.CancelAsync();
            await hosted.Host.StopAsync(timeout.Token);
        }

        Assert.Contains(hosted.Logs.GetSnapshot(), r => r.Id.Id == 1005);
        Assert.Contains(hosted.Logs.GetSnapshot(), r => r.Id.Id == 1007);
        await lease.DisposeAsync();
        hosted.Host.Dispose();

        // What was acknowledged as durable survived. The write after it was never acknowledged: it survived only if the
        // checkpoint that made 50 durable was still under way when it ran (the durable write returns its session to the
        // pool before waiting), and then the recovered commit point of its session says so (CPR, section 3).
        await using HostedCounters restarted = await HostedCounters.StartAsync(directory);
        bool survived = restarted.Pool.RecoveredCommitPoints[writer].UntilSerialNo >= unacknowledged;
        Assert.Equal(survived ? 51 : 50, await restarted.ReadAsync(5));
    }

    [Fact]
    public async Task Two_stops_at_once_and_a_disposal_each_return_only_once_the_store_is_closed()
    {
        // ASP.NET's minimal hosting under WebApplicationFactory stops the host twice at once: the test host's stop and
        // the application's own, woken by it. Whichever comes second used to return at once, while the first still
        // drained, and a host started right after on the same directory found its lock held.
        string directory = _directory.NewSubdirectory();
        HostedCounters hosted = await HostedCounters.StartAsync(directory);
        await hosted.Pool.RunAsync(session => session.RMW(1, 7));
        SessionLease<Counters.Session> lease = await hosted.Pool.RentAsync();
        Task first = hosted.StoreHost.StopAsync(CancellationToken.None);
        Task second = hosted.StoreHost.StopAsync(CancellationToken.None);
        Task disposal = hosted.StoreHost.DisposeAsync().AsTask();
        Assert.False(first.IsCompleted, "the first stop waits for the rented session");
        Assert.False(second.IsCompleted, "the second stop returned while the first was still draining");
        Assert.False(disposal.IsCompleted, "the disposal returned while the stop was still draining");

        await lease.DisposeAsync();
        await Task.WhenAll(first, second, disposal);
        hosted.Host.Dispose();
        // The directory's lock is free, and the first stop's final checkpoint holds the write.
        await using HostedCounters restarted = await HostedCounters.StartAsync(directory);
        Assert.Equal(7, await restarted.ReadAsync(1));
    }

    /// <summary>A hosted service registered after the store: it reads the store as it starts.</summary>
    private sealed class ProbeService(HybridKVSessionPool<Counters.Store, Counters.Session> pool) : IHostedService
    {
        public long ValueAtStart { get; private set; } = -1;

        public bool StoreWasOpen { get; private set; }

        public async Task StartAsync(CancellationToken cancellationToken)
        {
            // Throws if the store is not open yet: the pool would wait for it, the store itself does not.
            StoreWasOpen = !pool.Store.IsRecoveryRequired;
            ValueAtStart = await pool.RunAsync(async (session, token) =>
                (await session.ReadAsync(1, cancellationToken: token)).Output, cancellationToken);
        }

        public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;
    }
}
