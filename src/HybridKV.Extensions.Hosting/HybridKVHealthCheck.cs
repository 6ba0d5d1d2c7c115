using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// Reports a hosted store: unhealthy until it is recovered and open, once it is stopping, after a device error or a
/// failed checkpoint; degraded while operations have waited longer than the allowed commit lag to become durable.
/// </summary>
/// <typeparam name="TStore">The store type.</typeparam>
/// <typeparam name="TSession">The store's session type.</typeparam>
internal sealed class HybridKVHealthCheck<TStore, TSession> : IHealthCheck
    where TStore : class, IHybridKVStore<TStore, TSession>
    where TSession : class, IHybridKVSession
{
    private readonly HybridKVStoreHost<TStore, TSession> _host;
    private readonly TimeSpan? _maxCommitLag;
    private readonly TimeProvider _time;

    public HybridKVHealthCheck(HybridKVStoreHost<TStore, TSession> host, TimeSpan? maxCommitLag, TimeProvider time)
    {
        _host = host;
        _maxCommitLag = maxCommitLag;
        _time = time;
    }

    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(context);
        return Task.FromResult(Check(context.Registration.FailureStatus));
    }

    private HealthCheckResult Check(HealthStatus failureStatus)
    {
        if (_host.OpenError is { } openError)
        {
            return new HealthCheckResult(failureStatus, "The store could not be opened or recovered.", openError);
        }

        if (_host.Store is not { } store || _host.Commits is not { } commits)
        {
            return new HealthCheckResult(failureStatus, "The store is not open: not recovered yet, or stopping.");
        }

        TimeSpan lag = _host.CommitLag;
        DateTimeOffset? lastCommit = commits.LastCommit;
        var data = new Dictionary<string, object>
        {
            ["recovered"] = _host.Recovery is not null,
            ["recoveredCheckpoint"] = _host.Recovery?.Token.ToString() ?? "none",
            ["lastCommitAgeSeconds"] = lastCommit is { } at ? (_time.GetUtcNow() - at).TotalSeconds : -1,
            ["commitLagSeconds"] = lag.TotalSeconds,
            ["checkpoints"] = commits.CheckpointCount,
            ["tailAddress"] = store.TailAddress,
            ["rentedSessions"] = _host.RentedCount,
        };
        if (store.DeviceError is { } deviceError)
        {
            return new HealthCheckResult(failureStatus, "Writing the log to its device failed.", deviceError, data);
        }

        if (commits.LastFailure is { } checkpointError)
        {
            return new HealthCheckResult(failureStatus, "The last checkpoint failed.", checkpointError, data);
        }

        TimeSpan allowed = _maxCommitLag ?? 3 * _host.Options.CheckpointInterval;
        if (lag > allowed)
        {
            return HealthCheckResult.Degraded(
                $"Operations have waited {lag.TotalSeconds:F1} s to become durable, more than {allowed.TotalSeconds:F1} s.",
                data: data);
        }

        return HealthCheckResult.Healthy("The store is open and committing.", data);
    }
}
