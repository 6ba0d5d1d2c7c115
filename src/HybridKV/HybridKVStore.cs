using System.Collections.Concurrent;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Log;
using HybridKV.Operations;
using HybridKV.Sessions;
using HybridKV.Utilities;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace HybridKV;

/// <summary>
/// A concurrent key-value store: a latch-free hash index over a HybridLog whose newest part is updated in place
/// (FASTER). Operations go through sessions (<see cref="NewSession()"/>); the user's read and update logic is the
/// functions struct <typeparamref name="TFunctions"/>, bound statically.
/// </summary>
/// <remarks>
/// This version keeps the whole log in memory, within <see cref="StoreSettings.MemorySizeBytes"/>; an operation that
/// needs a record beyond that budget throws <see cref="LogFullException"/> and changes nothing.
/// Dispose the store after its sessions have finished their operations: <see cref="Dispose"/> waits for operations
/// in progress, and later calls on any session throw <see cref="ObjectDisposedException"/>.
/// </remarks>
/// <typeparam name="TKey">The key type, any unmanaged struct.</typeparam>
/// <typeparam name="TValue">The value type, any unmanaged struct.</typeparam>
/// <typeparam name="TInput">What reads and RMWs pass to the callbacks.</typeparam>
/// <typeparam name="TOutput">What reads produce.</typeparam>
/// <typeparam name="TContext">User state handed back to completion callbacks.</typeparam>
/// <typeparam name="TFunctions">The callbacks, as a struct.</typeparam>
public sealed class HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly StoreMetrics _metrics;
    private readonly ILogger _logger;

    // The device the store created from StoreSettings.LogDirectory, which it therefore disposes.
    private readonly LocalFileDevice? _ownedDevice;
    private readonly ConcurrentDictionary<Guid, byte> _openSessionIds = new();
    private int _disposed;

    /// <summary>Creates an empty store.</summary>
    /// <param name="settings">Sizes and tuning; validated here.</param>
    /// <param name="functions">The callbacks (for a stateless struct, <c>default</c>).</param>
    /// <exception cref="ArgumentOutOfRangeException">A setting is invalid, or a record does not fit in a page.</exception>
    public HybridKVStore(StoreSettings settings, TFunctions functions = default)
    {
        ArgumentNullException.ThrowIfNull(settings);
        settings.Validate();
        int recordSize = LogRecord<TKey, TValue>.Size;
        if (recordSize > settings.PageSize)
        {
            throw new ArgumentOutOfRangeException(
                nameof(settings),
                settings.PageSizeBits,
                $"A record of this store takes {recordSize} bytes, more than a page of {settings.PageSize} bytes: " +
                $"raise {nameof(StoreSettings.PageSizeBits)} to at least {Math.Max(StoreSettings.MinPageSizeBits,
                    64 - long.LeadingZeroCount(recordSize - 1))}.");
        }

        Settings = settings;
        _logger = settings.LoggerFactory?.CreateLogger("HybridKV.Store") ?? NullLogger.Instance;
        if (settings.LogDirectory is not null)
        {
            _ownedDevice = new LocalFileDevice(new LocalFileDeviceOptions
            {
                Directory = Path.Combine(settings.LogDirectory, "log"),
                SegmentSize = 1L << settings.LogSegmentSizeBits,
                SectorSize = Math.Min(LocalFileDeviceDefaultSector, settings.PageSize),
            });
        }

        try
        {
            _engine = new StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
                settings, functions, settings.LogDevice ?? _ownedDevice, _logger);
        }
        catch
        {
            _ownedDevice?.Dispose();
            throw;
        }

        _metrics = new StoreMetrics(_engine.Log, _engine.Index, () => _openSessionIds.Count);
        StoreLog.StoreCreated(_logger, settings.IndexBuckets, settings.BufferPages, settings.PageSize,
            settings.MutablePages, recordSize);
    }

    private const int LocalFileDeviceDefaultSector = 4096;

    /// <summary>The settings the store was created with.</summary>
    public StoreSettings Settings { get; }

    /// <summary>The next logical address the log will allocate: how much log has been written.</summary>
    public long TailAddress => _engine.Log.TailAddress;

    /// <summary>Records below this address are read-only: updates copy them to the tail.</summary>
    public long ReadOnlyAddress => _engine.Log.ReadOnlyAddress;

    /// <summary>Records below this address are on the log device, not in memory.</summary>
    public long HeadAddress => _engine.Log.HeadAddress;

    /// <summary>The lowest address still part of the log; reads of older records return <see cref="Status.NotFound"/>.</summary>
    public long BeginAddress => _engine.Log.BeginAddress;

    /// <summary>Everything below this address has been written to the log device.</summary>
    public long FlushedUntilAddress => _engine.Log.FlushedUntilAddress;

    /// <summary>
    /// Drops the log below <paramref name="newBeginAddress"/>: records there read as absent from now on, and once no
    /// operation can still be looking at them, whole device segments below the address are deleted.
    /// </summary>
    /// <param name="newBeginAddress">From the current <see cref="BeginAddress"/> to <see cref="HeadAddress"/>.</param>
    /// <param name="cancellationToken">Cancels waiting for the segments to be deleted.</param>
    public async Task ShiftBeginAddressAsync(long newBeginAddress, CancellationToken cancellationToken = default)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        if (newBeginAddress < BeginAddress || newBeginAddress > HeadAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(newBeginAddress), newBeginAddress,
                $"The new begin address must be from the current begin address ({BeginAddress}) to the head " +
                $"address ({HeadAddress}); records above the head are still in memory.");
        }

        long safeEpoch = _engine.Log.ShiftBeginAddress(newBeginAddress);
        await _engine.Epoch.WaitUntilSafeAsync(safeEpoch, cancellationToken).ConfigureAwait(false);
        if (_engine.Log.Device is { } device)
        {
            await device.TruncateUntilAsync(newBeginAddress, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>The number of sessions currently open.</summary>
    public int OpenSessionCount => _openSessionIds.Count;

    internal bool IsDisposed => Volatile.Read(ref _disposed) != 0;

    internal StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> Engine => _engine;

    /// <summary>Starts a session with a new identity: a logical thread of operations.</summary>
    /// <exception cref="InvalidOperationException"><see cref="StoreSettings.MaxSessions"/> sessions are open.</exception>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    public Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> NewSession() => NewSession(Guid.NewGuid());

    /// <summary>Starts a session with the given identity (the identity CPR commit points are reported under).</summary>
    /// <exception cref="ArgumentException">A session with this identity is already open.</exception>
    /// <exception cref="InvalidOperationException"><see cref="StoreSettings.MaxSessions"/> sessions are open.</exception>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    public Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> NewSession(Guid id)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        if (!_openSessionIds.TryAdd(id, 0))
        {
            throw new ArgumentException($"A session with id {id} is already open on this store.", nameof(id));
        }

        if (!_engine.Epoch.TryAcquireEntry(out int entry))
        {
            _openSessionIds.TryRemove(id, out _);
            ThrowHelper.ThrowTooManySessions(Settings.MaxSessions);
        }

        return new Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>(this, _engine, entry, id);
    }

    internal void OnSessionDisposed(Guid id) => _openSessionIds.TryRemove(id, out _);

    /// <summary>
    /// Waits for operations in progress to leave the store, then frees its memory. Sessions stay objects that throw
    /// <see cref="ObjectDisposedException"/>; disposing them afterwards is harmless.
    /// </summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        // Every session checks the flag after protecting itself. After the flush, a session that protected itself
        // earlier is visible to the scan below, and one that protects itself later sees the flag; so once the scan
        // finds nobody protected, no session can touch the index or the log again.
        Epochs.LightEpoch.FlushProtectionStores();
        var spinner = new SpinWait();
        while (_engine.Epoch.AnyProtected())
        {
            spinner.SpinOnce();
        }

        StoreLog.StoreDisposed(_logger, _engine.Log.TailAddress);
        _metrics.Dispose();
        _engine.Dispose();
        _ownedDevice?.Dispose();
    }
}
