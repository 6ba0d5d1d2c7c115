using HybridKV;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Adds the health check of a hosted HybridKV store: <c>builder.Services.AddHealthChecks().AddHybridKV&lt;Store, Session&gt;()</c>.</summary>
public static class HybridKVHealthChecksBuilderExtensions
{
    /// <summary>
    /// Adds a health check of the store added by <see cref="HybridKVServiceCollectionExtensions.AddHybridKV{TStore, TSession}(IServiceCollection, string?, Action{HybridKVOptions}?)"/>: unhealthy until it is
    /// recovered, once it stops, after a device error or a failed checkpoint; degraded while operations have waited
    /// longer than <paramref name="maxCommitLag"/> to become durable.
    /// </summary>
    /// <typeparam name="TStore">The store type.</typeparam>
    /// <typeparam name="TSession">The store's session type.</typeparam>
    /// <param name="builder">The health checks builder.</param>
    /// <param name="name">The check's name. Default <c>hybridkv</c>.</param>
    /// <param name="maxCommitLag">How long operations may wait to become durable before the store counts as degraded;
    /// <see langword="null"/> for three checkpoint intervals.</param>
    /// <param name="failureStatus">What an unhealthy store reports. Default <see cref="HealthStatus.Unhealthy"/>.</param>
    /// <param name="tags">Tags to filter checks by (say, <c>ready</c>).</param>
    /// <returns><paramref name="builder"/>.</returns>
    public static IHealthChecksBuilder AddHybridKV<TStore, TSession>(
        this IHealthChecksBuilder builder,
        string name = "hybridkv",
        TimeSpan? maxCommitLag = null,
        HealthStatus? failureStatus = null,
        IEnumerable<string>? tags = null)
        where TStore : class, IHybridKVStore<TStore, TSession>
        where TSession : class, IHybridKVSession
    {
        ArgumentNullException.ThrowIfNull(builder);
        if (maxCommitLag is { } lag && lag <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(maxCommitLag), lag,
                "The allowed commit lag must be positive, or null for three checkpoint intervals.");
        }

        return builder.Add(new HealthCheckRegistration(
            name,
            sp => new HybridKVHealthCheck<TStore, TSession>(
                sp.GetRequiredService<HybridKVStoreHost<TStore, TSession>>(), maxCommitLag,
                sp.GetService<TimeProvider>() ?? TimeProvider.System),
            failureStatus,
            tags));
    }
}
