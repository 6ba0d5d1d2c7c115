using System.Diagnostics;
using System.Diagnostics.Metrics;
using HybridKV.Checkpoints;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// The hosted service that owns a store: opens and recovers it before any hosted service starts (so before the web
/// server listens), runs its checkpoints, and on stop drains the session pool, takes the final checkpoint within the
/// host's shutdown timeout and disposes it.
/// </summary>
/// <typeparam name="TStore">The store type.</typeparam>
/// <typeparam name="TSession">The store's session type.</typeparam>
internal sealed class HybridKVStoreHost<TStore, TSession> :
    IHostedLifecycleService, IHostedStoreState, IAsyncDisposable, IDisposable
    where TStore : class, IHybridKVStore<TStore, TSession>
    where TSession : class, IHybridKVSession
{
    private static readonly string StoreTypeName = typeof(TStore).FullName ?? typeof(TStore).Name;

    // What logs, meters and messages call a store of this type (the options keep the full name as their key).
    private static readonly string StoreDisplayName = TypeDisplayName.Of(typeof(TStore));

    private readonly HybridKVOptions _options;
    private readonly HybridKVSessionPool<TStore, TSession> _pool;
    private readonly ILoggerFactory _loggerFactory;
    private readonly ILogger _logger;
    private readonly TimeProvider _time;
    private readonly HostingMetrics _metrics;
    private readonly IMeterFactory _meterFactory;
    private TStore? _store;
    private CommitScheduler? _commits;

    // The log device and checkpoint store a storage provider opened (null with a directory): disposed after the store.
    private HybridKVStorage? _storage;
    private int _stopped;

    // Completes once the first stop or disposal closed the store: a later one (ASP.NET's minimal hosting stops the host
    // twice at once under WebApplicationFactory) returns no sooner, so that the store's files are free when it does.
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public HybridKVStoreHost(
        IOptionsMonitor<HybridKVOptions> options,
        HybridKVSessionPool<TStore, TSession> pool,
        ILoggerFactory loggerFactory,
        IMeterFactory meterFactory,
        TimeProvider? time = null)
        : this(options.Get(OptionsName), StoreDisplayName, pool, loggerFactory, meterFactory, time ?? TimeProvider.System)
    {
    }

    /// <summary>A store hosted by something other than the generic host (Orleans grain storage), under a name of its own.</summary>
    /// <param name="options">The store's options, validated by the caller.</param>
    /// <param name="name">What logs and meters call the store.</param>
    /// <param name="pool">The pool to open once the store is recovered.</param>
    /// <param name="loggerFactory">Where the store and the host log.</param>
    /// <param name="meterFactory">Where the meters are created.</param>
    /// <param name="time">The clock of checkpoint intervals and commit lag.</param>
    internal HybridKVStoreHost(HybridKVOptions options, string name, HybridKVSessionPool<TStore, TSession> pool,
        ILoggerFactory loggerFactory, IMeterFactory meterFactory, TimeProvider time)
    {
        _options = options;
        _name = name;
        _pool = pool;
        _loggerFactory = loggerFactory;
        _logger = loggerFactory.CreateLogger("HybridKV.Hosting");
        _time = time;
        _metrics = new HostingMetrics(meterFactory, name, this);
        _meterFactory = meterFactory;
    }

    // What logs and meters call the store: its type, or the name its host gave it.
    private readonly string _name;

    /// <summary>The name of the options of this store type (one store per type per host).</summary>
    public static string OptionsName => StoreTypeName;

    /// <summary>What opening the store found: null before it opened, and when there was no checkpoint.</summary>
    public RecoveryResult? Recovery { get; private set; }

    /// <summary>Why the store could not be opened, if it could not.</summary>
    public Exception? OpenError { get; private set; }

    /// <summary>The scheduler of the store's checkpoints, once open.</summary>
    public CommitScheduler? Commits => _commits;

    /// <summary>The options the store runs with.</summary>
    public HybridKVOptions Options => _options;

    /// <inheritdoc/>
    public IHybridKVStore? Store => Volatile.Read(ref _stopped) == 0 ? Volatile.Read(ref _store) : null;

    /// <inheritdoc/>
    public long OperationCount => _pool.OperationCount;

    /// <inheritdoc/>
    public int PendingCount => _pool.PendingCount;

    /// <inheritdoc/>
    public int RentedCount => _pool.RentedCount;

    /// <inheritdoc/>
    public TimeSpan CommitLag
    {
        get
        {
            if (Store is not { } store || _commits is not { } commits || !store.HasUncommittedOperations)
            {
                return TimeSpan.Zero;
            }

            DateTimeOffset since = commits.LastCommit ?? _openedAt;
            return _time.GetUtcNow() - since;
        }
    }

    private DateTimeOffset _openedAt;

    /// <summary>
    /// Opens the storage provider's device and checkpoint store when there is one, then opens and recovers the store,
    /// before any hosted service's <c>StartAsync</c>.
    /// </summary>
    public async Task StartingAsync(CancellationToken cancellationToken)
    {
        string location = _options.Location;
        HostingLog.Opening(_logger, _name, location);
        var clock = Stopwatch.StartNew();
        TStore? store = null;
        HybridKVStorage? storage = null;
        try
        {
            if (_options.StorageProvider is { } provider)
            {
                storage = await provider.OpenAsync(_options, _loggerFactory, cancellationToken).ConfigureAwait(false);
                _storage = storage;
            }
            else
            {
                Directory.CreateDirectory(_options.Directory!);
            }

            store = TStore.Create(_options.ToStoreSettings(_loggerFactory, storage, _meterFactory));
            RecoveryResult? recovery = store.IsRecoveryRequired
                ? await store.RecoverAsync(null, null, cancellationToken).ConfigureAwait(false)
                : null;
            var commits = new CommitScheduler(store, _options, _logger, _metrics, _time);
            _pool.Open(store, commits, _options.SessionPoolSize);
            Recovery = recovery;
            _openedAt = _time.GetUtcNow();
            _commits = commits;
            Volatile.Write(ref _store, store);
            commits.Start(recovered: recovery is not null);
            if (recovery is not null)
            {
                HostingLog.Recovered(_logger, _name, recovery.Token, recovery.Version,
                    clock.Elapsed.TotalMilliseconds, _options.SessionPoolSize);
            }
            else
            {
                HostingLog.StartedEmpty(_logger, _name, _options.SessionPoolSize);
            }
        }
        catch (Exception error)
        {
            OpenError = error;
            HostingLog.OpenFailed(_logger, _name, location, error);
            _pool.Fail(error);
            store?.Dispose();
            _storage = null;
            if (storage is not null)
            {
                await storage.DisposeAsync().ConfigureAwait(false);
            }

            throw;
        }
    }

    /// <inheritdoc/>
    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <inheritdoc/>
    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <inheritdoc/>
    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>
    /// Drains the pool, takes the final checkpoint and disposes the store, within <paramref name="cancellationToken"/>
    /// (the host's shutdown timeout): when it runs out, the store is disposed without waiting any longer.
    /// </summary>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (Interlocked.Exchange(ref _stopped, 1) != 0)
        {
            await WaitClosedAsync(cancellationToken).ConfigureAwait(false);
            return;
        }

        try
        {
            await StopStoreAsync(cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _closed.TrySetResult();
        }
    }

    private async Task StopStoreAsync(CancellationToken cancellationToken)
    {
        TStore? store = Volatile.Read(ref _store);
        if (store is null)
        {
            _pool.Close();
            await DisposeStorageAsync().ConfigureAwait(false);
            return;
        }

        var clock = Stopwatch.StartNew();
        bool committed = false;
        Exception? failure = null;
        try
        {
            if (!await _pool.DrainAsync(cancellationToken).ConfigureAwait(false))
            {
                HostingLog.DrainTimedOut(_logger, _name, _pool.RentedCount);
            }

            committed = await _commits!.StopAsync(cancellationToken).ConfigureAwait(false);
            failure = _commits.LastFailure;
        }
        catch (OperationCanceledException error) when (cancellationToken.IsCancellationRequested)
        {
            failure = error;
        }
        finally
        {
            _pool.DisposeIdleSessions();
            store.Dispose();
            _commits!.Dispose();
            await DisposeStorageAsync().ConfigureAwait(false);
        }

        if (committed)
        {
            HostingLog.Stopped(_logger, _name, clock.Elapsed.TotalMilliseconds);
        }
        else
        {
            HostingLog.StoppedUncommitted(_logger, _name, failure);
        }
    }

    /// <inheritdoc/>
    public Task StoppedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>A host disposed without being stopped (say, it failed to start) still releases the store's files, and
    /// the storage provider's device and checkpoint store (their leases); a stop under way is waited for, so the files
    /// are free when this returns.</summary>
    public async ValueTask DisposeAsync()
    {
        if (!DisposeStore())
        {
            await WaitClosedAsync(CancellationToken.None).ConfigureAwait(false);
        }

        await DisposeStorageAsync().ConfigureAwait(false);
    }

    /// <inheritdoc cref="DisposeAsync"/>
    public void Dispose()
    {
        if (!DisposeStore())
        {
            WaitClosedAsync(CancellationToken.None).GetAwaiter().GetResult();
        }

        DisposeStorageAsync().AsTask().GetAwaiter().GetResult();
    }

    /// <summary>Closes the store unless a stop or disposal came first; returns whether this call closed it.</summary>
    private bool DisposeStore()
    {
        if (Interlocked.Exchange(ref _stopped, 1) != 0)
        {
            return false;
        }

        try
        {
            _pool.Close();
            _commits?.Abandon();
            Volatile.Read(ref _store)?.Dispose();
        }
        finally
        {
            _closed.TrySetResult();
        }

        return true;
    }

    /// <summary>Waits for the stop or disposal that came first to close the store, or for the caller to give up.</summary>
    private async Task WaitClosedAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _closed.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The host's shutdown timeout ran out: it goes on, as it does when the first stop runs out of time.
        }
    }

    // After the store, which does not own them; once, whichever of stop and dispose comes first.
    private ValueTask DisposeStorageAsync() =>
        Interlocked.Exchange(ref _storage, null) is { } storage ? storage.DisposeAsync() : ValueTask.CompletedTask;
}
