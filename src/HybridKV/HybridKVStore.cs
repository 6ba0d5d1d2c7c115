using HybridKV.Checkpoints;
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
/// Without a device the whole log stays in memory, within <see cref="StoreSettings.MemorySizeBytes"/>: an operation
/// that needs a record beyond that budget throws <see cref="LogFullException"/> and changes nothing. With one, pages
/// that leave memory go to the device. A store created over a device or checkpoint store that already holds a store
/// must be recovered (<see cref="RecoverAsync"/>) before it is used, unless <see cref="StoreSettings.ExistingData"/>
/// says to delete it.
/// Dispose the store after its sessions have finished their operations: <see cref="Dispose"/> waits for operations
/// in progress, and later calls on any session throw <see cref="ObjectDisposedException"/>.
/// </remarks>
/// <typeparam name="TKey">The key type, any unmanaged struct.</typeparam>
/// <typeparam name="TValue">The value type, any unmanaged struct.</typeparam>
/// <typeparam name="TInput">What reads and RMWs pass to the callbacks.</typeparam>
/// <typeparam name="TOutput">What reads produce.</typeparam>
/// <typeparam name="TContext">User state handed back to completion callbacks.</typeparam>
/// <typeparam name="TFunctions">The callbacks, as a struct.</typeparam>
public sealed class HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions> :
    IHybridKVStore<HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions>,
        Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>>
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly StoreMetrics _metrics;
    private readonly ILogger _logger;

    // The device the store created from StoreSettings.LogDirectory, which it therefore disposes.
    private readonly LocalFileDevice? _ownedDevice;
    private readonly SessionRegistry _sessions = new();

    // Checkpoints: null when the store has no log device or no checkpoint store.
    private readonly LocalCheckpointStore? _ownedCheckpointStore;
    private readonly CheckpointCatalog? _catalog;
    private readonly CheckpointStateMachine<TKey, TValue, TInput, TOutput, TContext, TFunctions>? _checkpoints;
    private readonly CancellationTokenSource _stopping = new();
    private Task _periodicCheckpoints = Task.CompletedTask;
    private int _periodicStarted;
    private long _periodicTicksSkipped;
    private volatile Compaction.MemoryCompactor? _memoryCompactor;
    private readonly Compaction.LogCompaction<TKey, TValue, TInput, TOutput, TContext, TFunctions>? _logCompaction;
    private int _logCompactionStarted;
    private readonly object _backgroundGate = new();
    private int _recovered;
    private int _disposed;

    // What the store's log is; its log id is known once the device was opened.
    private readonly StoreIdentity _identity;

    // Why the store must be recovered before it is used: its device or checkpoint store holds a store. Null when not.
    private volatile string? _recoveryRequired;

    /// <summary>Creates a store: empty, or (over a device that holds a store) to be recovered with <see cref="RecoverAsync"/>.</summary>
    /// <param name="settings">Sizes and tuning; validated here.</param>
    /// <param name="functions">The callbacks (for a stateless struct, <c>default</c>).</param>
    /// <exception cref="ArgumentOutOfRangeException">A setting is invalid, or a record does not fit in a page.</exception>
    /// <exception cref="ArgumentException">Settings conflict, or one would be ignored.</exception>
    /// <exception cref="Devices.DirectoryInUseException">Another store holds the log or checkpoint directory.</exception>
    /// <exception cref="InvalidOperationException">The device's log was written by a store of other types, geometry,
    /// hash function or format; nothing was changed.</exception>
    /// <exception cref="InvalidDataException">The device's label is damaged, or the device holds a log without one.</exception>
    public HybridKVStore(StoreSettings settings, TFunctions functions = default)
    {
        ArgumentNullException.ThrowIfNull(settings);
        settings.Validate();
        int recordSize = LogRecord<TKey, TValue>.MinSize;
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
            string? checkpointDirectory = settings.CheckpointDirectory ??
                (settings.LogDirectory is null ? null : Path.Combine(settings.LogDirectory, "checkpoints"));
            if (settings.CheckpointStore is null && checkpointDirectory is not null)
            {
                _ownedCheckpointStore = new LocalCheckpointStore(checkpointDirectory);
            }

            if ((settings.CheckpointStore ?? _ownedCheckpointStore) is { } checkpointStore && _engine.Log.Device is not null)
            {
                _catalog = new CheckpointCatalog(checkpointStore);
            }

            StoreOpening.Outcome opened = StoreOpening.Open(_engine.Log.Device, _catalog,
                StoreIdentity.For<TKey, TValue>(settings.PageSizeBits,
                    _engine.Log.Device?.SegmentSize ?? 1L << settings.LogSegmentSizeBits, _engine.KeyHashOf),
                settings.ExistingData, _logger);
            _identity = opened.Identity;
            _recoveryRequired = opened.RecoveryRequired;
            if (_catalog is not null)
            {
                _checkpoints = new CheckpointStateMachine<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
                    _engine, _sessions, _catalog, _engine.Log.Device!, settings.CheckpointsToKeep, _identity,
                    settings.LoggerFactory?.CreateLogger("HybridKV.Checkpoints") ?? NullLogger.Instance);
            }
        }
        catch
        {
            _engine?.Dispose();
            _ownedCheckpointStore?.Dispose();
            _ownedDevice?.Dispose();
            throw;
        }

        if (_engine.Log.HasDevice)
        {
            _logCompaction = new Compaction.LogCompaction<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
                _engine, ShiftBeginCore, _logger, _stopping.Token);
        }

        _metrics = new StoreMetrics(_engine.Log, _engine.Index, () => _sessions.OpenCount, () => _memoryCompactor,
            () => _engine.BytesReadByOperations, () => _engine.HotReadsCopied, _checkpoints?.Committed, _engine.ReadCache,
            settings.MeterFactory);
        StoreLog.StoreCreated(_logger, settings.IndexBuckets, settings.BufferPages, settings.PageSize,
            settings.MutablePages, recordSize);
    }

    private const int LocalFileDeviceDefaultSector = 4096;

    /// <inheritdoc/>
    static HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions>
        IHybridKVStore<HybridKVStore<TKey, TValue, TInput, TOutput, TContext, TFunctions>,
            Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>>.Create(StoreSettings settings) => new(settings);

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

        ThrowIfRecoveryRequired();
        if (newBeginAddress < BeginAddress || newBeginAddress > HeadAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(newBeginAddress), newBeginAddress,
                $"The new begin address must be from the current begin address ({BeginAddress}) to the head " +
                $"address ({HeadAddress}); records above the head are still in memory.");
        }

        await ShiftBeginCore(newBeginAddress, cancellationToken).Truncated.ConfigureAwait(false);
        _logCompaction?.BeginShiftedByHand();
    }

    /// <summary>
    /// Copies the live records of the log below <paramref name="untilAddress"/> (rounded down to a page boundary) to
    /// the tail, then drops that part of the log: its records read as absent, deleted keys leave neither a record nor
    /// an index entry, and its whole device segments are deleted once no kept checkpoint needs them (at once without
    /// checkpoints). Runs concurrently with operations, checkpoints and other sessions; a crash at any point recovers
    /// the same data, because a copy changes no value. One compaction runs at a time, the automatic ones included
    /// (<see cref="StoreSettings.LogCompactionRatio"/>).
    /// </summary>
    /// <param name="untilAddress">From <see cref="BeginAddress"/> to <see cref="HeadAddress"/>: records above the head
    /// are in memory, where <see cref="StoreSettings.MemoryCompactionMaxLiveFraction"/> keeps them.</param>
    /// <param name="cancellationToken">Stops the compaction; copies already made stay (they change no value) and the
    /// begin address does not move.</param>
    /// <returns>What the compaction copied and dropped.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="untilAddress"/> is outside the range above.</exception>
    /// <exception cref="InvalidOperationException">The store has no log device, or must be recovered first.</exception>
    /// <exception cref="CorruptLogException">A record in the range is damaged; nothing was dropped.</exception>
    public Task<CompactionResult> CompactAsync(long untilAddress, CancellationToken cancellationToken = default)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        ThrowIfRecoveryRequired();
        if (_logCompaction is null)
        {
            throw new InvalidOperationException(
                "This store has no log device: its whole log is in memory, and there is nothing to compact.");
        }

        if (untilAddress < BeginAddress || untilAddress > HeadAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(untilAddress), untilAddress,
                $"Compaction must end from the current begin address ({BeginAddress}) to the head address " +
                $"({HeadAddress}); records above the head are still in memory.");
        }

        return _logCompaction.CompactAsync(untilAddress, cancellationToken);
    }

    /// <summary>
    /// Every record of the log in [<paramref name="fromAddress"/>, <paramref name="untilAddress"/>), in address order,
    /// from memory and the device: superseded values and delete markers (<see cref="ScanRecord{TKey, TValue}.IsDeleted"/>)
    /// included. The range ends at the tail as the scan starts; a key updated in place in the mutable region while the
    /// scan copies its page may show either value (a value wider than 8 bytes, torn between them, unless its updaters
    /// are atomic). Holds two pages of memory and an epoch row (as a session does) until disposed, and keeps compaction
    /// from dropping what it has not read yet. Not inside a protected scope.
    /// </summary>
    /// <param name="fromAddress">Where to start; below <see cref="BeginAddress"/> the scan starts there.</param>
    /// <param name="untilAddress">Where to stop (exclusive); past the tail the scan stops at the tail.</param>
    /// <param name="cancellationToken">Stops the scan.</param>
    /// <exception cref="ArgumentOutOfRangeException">An address is negative, or the range is reversed.</exception>
    /// <exception cref="CorruptLogException">A record read from the device is damaged or missing.</exception>
    public IAsyncEnumerable<ScanRecord<TKey, TValue>> ScanAsync(
        long fromAddress, long untilAddress, CancellationToken cancellationToken = default)
    {
        ThrowIfCannotScan(fromAddress, untilAddress);
        return Scanning.LogScan.RunAsync(_engine, () => IsDisposed, fromAddress, untilAddress, liveOnly: false,
            cancellationToken);
    }

    /// <summary>
    /// The live records: for each key, its last record below the tail as the scan starts, unless that is a delete
    /// marker; each key at most once, in address order. A key written only after the scan started is not returned; one
    /// updated or deleted meanwhile is returned with its value from before (or, if updated in place, either value), or
    /// not at all if deleted in place. Costs a device read per record whose key has a newer record on the device.
    /// Memory, epoch row and protected scopes as for <see cref="ScanAsync"/>.
    /// </summary>
    /// <param name="cancellationToken">Stops the scan.</param>
    /// <exception cref="CorruptLogException">A record read from the device is damaged or missing.</exception>
    public IAsyncEnumerable<ScanRecord<TKey, TValue>> ScanLiveAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfCannotScan(0, long.MaxValue);
        return Scanning.LogScan.RunAsync(_engine, () => IsDisposed, 0, long.MaxValue, liveOnly: true, cancellationToken);
    }

    /// <summary>
    /// <see cref="ScanAsync"/> for synchronous callers: blocks while records are read from the device. Dispose the
    /// enumerator (a <c>foreach</c> does) to release what the scan holds.
    /// </summary>
    /// <inheritdoc cref="ScanAsync" path="/param"/>
    public IEnumerable<ScanRecord<TKey, TValue>> Scan(long fromAddress, long untilAddress)
    {
        ThrowIfCannotScan(fromAddress, untilAddress);
        return Scanning.BlockingEnumerable.Of(ScanAsync(fromAddress, untilAddress));
    }

    /// <summary><see cref="ScanLiveAsync"/> for synchronous callers: blocks while records are read from the device.</summary>
    public IEnumerable<ScanRecord<TKey, TValue>> ScanLive()
    {
        ThrowIfCannotScan(0, long.MaxValue);
        return Scanning.BlockingEnumerable.Of(ScanLiveAsync());
    }

    private void ThrowIfCannotScan(long fromAddress, long untilAddress)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        ThrowIfRecoveryRequired();
        ArgumentOutOfRangeException.ThrowIfNegative(fromAddress);
        if (untilAddress < fromAddress)
        {
            throw new ArgumentOutOfRangeException(nameof(untilAddress), untilAddress,
                $"The scan must end at or after where it starts ({fromAddress}).");
        }
    }

    /// <summary>
    /// Moves the begin address toward <paramref name="newBeginAddress"/>, no further than a running scan still reads,
    /// and starts deleting what no checkpoint needs below it once no operation can still read there. Returns where it
    /// moved and the deletion.
    /// </summary>
    private (long Address, Task Truncated) ShiftBeginCore(long newBeginAddress, CancellationToken cancellationToken)
    {
        (newBeginAddress, long safeEpoch) = _engine.Log.Pins.ShiftBegin(_engine.Log, newBeginAddress, _engine.Log.PageSize);
        return (newBeginAddress, TruncateBelowAsync(newBeginAddress, safeEpoch, cancellationToken));
    }

    private async Task TruncateBelowAsync(long newBeginAddress, long safeEpoch, CancellationToken cancellationToken)
    {
        await _engine.Epoch.WaitUntilSafeAsync(safeEpoch, cancellationToken).ConfigureAwait(false);
        if (_checkpoints is not null)
        {
            // A kept checkpoint may still need older segments; retention deletes them once none does.
            await _checkpoints.TruncateLogAsync(newBeginAddress, cancellationToken).ConfigureAwait(false);
        }
        else if (_engine.Log.Device is { } device)
        {
            await device.TruncateUntilAsync(newBeginAddress, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>The number of sessions currently open.</summary>
    public int OpenSessionCount => _sessions.OpenCount;

    /// <summary>
    /// Whether some session (open, or disposed since the last commit) has issued an operation that no durable
    /// checkpoint holds yet: whether a checkpoint taken now would make anything more durable. Reads and failed
    /// operations count, since they take serial numbers. Cheap enough to poll (a lock and a pass over the sessions).
    /// </summary>
    public bool HasUncommittedOperations => _sessions.AnyUncommitted();

    /// <summary>
    /// Why writing the log to its device failed, or <see langword="null"/> while it has not: once set, operations that
    /// need a new page frame fail until the store is reopened (data already written is intact).
    /// </summary>
    public Exception? DeviceError => _engine.Log.FlushError;

    /// <summary>Log compaction, with a device (for tests and metrics).</summary>
    internal Compaction.LogCompaction<TKey, TValue, TInput, TOutput, TContext, TFunctions>? LogCompaction => _logCompaction;
    /// <summary>
    /// The number of buckets the hash index has now: <see cref="StoreSettings.IndexBuckets"/> (or the recovered
    /// checkpoint's size) until it grows.
    /// </summary>
    public long IndexBucketCount => _engine.Index.BucketCount;

    /// <summary>
    /// Doubles the hash index now, while sessions keep operating (FASTER appendix B), unless it has reached
    /// <see cref="StoreSettings.IndexMaxBuckets"/>. The store also does this on its own when chains grow long
    /// (<see cref="StoreSettings.IndexGrowthOverflowPercent"/>). A resize and an index checkpoint wait for each other.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for a running resize or index checkpoint; once the resize has
    /// started it runs to its end.</param>
    /// <returns>Whether the index grew.</returns>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    /// <exception cref="InvalidOperationException">The store must be recovered first.</exception>
    public async Task<bool> GrowIndexAsync(CancellationToken cancellationToken = default)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        ThrowIfRecoveryRequired();
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stopping.Token);
        return await _engine.Index.GrowAsync(linked.Token).ConfigureAwait(false);
    }

    /// <summary>The background copying of live records near the head, once started (for tests).</summary>
    internal Compaction.MemoryCompactor? MemoryCompactor => _memoryCompactor;

    /// <summary>Checkpoints committed by mode, if the store takes checkpoints (the benchmark's progress line).</summary>
    internal CheckpointCounts? CheckpointsCommitted => _checkpoints?.Committed;

    /// <summary>Whether periodic checkpoints have started (tests).</summary>
    internal bool PeriodicCheckpointsStarted => Volatile.Read(ref _periodicStarted) != 0;

    /// <summary>Ticks of the periodic checkpoints' timer that found nothing to commit.</summary>
    internal long PeriodicTicksSkipped => Interlocked.Read(ref _periodicTicksSkipped);

    internal bool IsDisposed => Volatile.Read(ref _disposed) != 0;

    /// <summary>Where the store and its sessions log.</summary>
    internal ILogger Logger => _logger;

    /// <summary>The session table (tests).</summary>
    internal SessionRegistry SessionTable => _sessions;

    internal StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> Engine => _engine;

    /// <summary>Starts a session with a new identity: a logical thread of operations.</summary>
    /// <exception cref="InvalidOperationException"><see cref="StoreSettings.MaxSessions"/> sessions are open.</exception>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    public Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> NewSession() => NewSession(Guid.NewGuid());

    /// <summary>
    /// Starts a session with the given identity (the identity CPR commit points are recorded under). Its serial numbers
    /// start at 1; to resume a session after recovery, use <see cref="ContinueSession"/> instead.
    /// </summary>
    /// <exception cref="ArgumentException">A session with this identity is already open.</exception>
    /// <exception cref="InvalidOperationException"><see cref="StoreSettings.MaxSessions"/> sessions are open.</exception>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    public Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> NewSession(Guid id) =>
        OpenSession(id, continueRecovered: false, out _);

    /// <summary>
    /// Resumes a session after <see cref="RecoverAsync"/>: the session gets back its identity, and
    /// <paramref name="recovered"/> says exactly which of its operations survived (every one up to
    /// <see cref="CommitPoint.UntilSerialNo"/> except the excluded ones), so that the caller issues the rest again.
    /// Serial numbers continue after the commit point.
    /// </summary>
    /// <param name="id">The session's identity.</param>
    /// <param name="recovered">The session's commit point in the latest commit; <see cref="CommitPoint.None"/> when that
    /// commit does not name the session: none of its operations is durable, or it was disposed and an earlier commit
    /// recorded its final point (a disposed session is named by one commit after it closed, then forgotten, so that the
    /// session table stays bounded); the identity then starts over with serial number 1.</param>
    /// <exception cref="ArgumentException">A session with this identity is already open.</exception>
    /// <exception cref="InvalidOperationException"><see cref="StoreSettings.MaxSessions"/> sessions are open.</exception>
    /// <exception cref="ObjectDisposedException">The store is disposed.</exception>
    public Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> ContinueSession(Guid id, out CommitPoint recovered) =>
        OpenSession(id, continueRecovered: true, out recovered);

    private Session<TKey, TValue, TInput, TOutput, TContext, TFunctions> OpenSession(
        Guid id, bool continueRecovered, out CommitPoint recovered)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        ThrowIfRecoveryRequired();

        if (!_engine.Epoch.TryAcquireEntry(out int entry))
        {
            ThrowHelper.ThrowTooManySessions(Settings.MaxSessions);
        }

        StartBackgroundWork();
        try
        {
            SessionCprState state = _sessions.Register(id, () => _engine.State.SessionVersion, continueRecovered,
                out recovered);
            return new Session<TKey, TValue, TInput, TOutput, TContext, TFunctions>(this, _engine, entry, state);
        }
        catch
        {
            _engine.Epoch.ReleaseEntry(entry);
            throw;
        }
    }

    internal void OnSessionDisposed(SessionCprState state) => _sessions.Close(state, keepForCheckpoint: _checkpoints is not null);

    /// <summary>
    /// Takes a CPR checkpoint (CPR §6) while sessions keep running, and returns once it is durable. Every session's
    /// operations up to its CPR point (chosen as the session reaches its next operation; an idle session's is its last
    /// operation) are in it, and none after; each open session is told its commit point through
    /// <see cref="Session{TKey, TValue, TInput, TOutput, TContext, TFunctions}.Committed"/>.
    /// </summary>
    /// <param name="kind">Index and log, or log only.</param>
    /// <param name="mode">Fold-over or snapshot (CPR App. D), or <see cref="CheckpointMode.Auto"/> (the default) to let the
    /// store choose from whether operations read the device since the previous checkpoint.</param>
    /// <param name="cancellationToken">Cancels waiting for a running checkpoint, or the index checkpoint; once sessions
    /// start moving to the next version the commit runs to its end.</param>
    /// <returns>The checkpoint's token.</returns>
    /// <exception cref="InvalidOperationException">The store has no log device or no checkpoint store.</exception>
    /// <exception cref="Devices.StorageDeviceException">Writing the log failed; the checkpoint is not committed.</exception>
    public async Task<Guid> TakeCheckpointAsync(
        CheckpointKind kind = CheckpointKind.Full, CheckpointMode mode = CheckpointMode.Auto,
        CancellationToken cancellationToken = default)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        if (!Enum.IsDefined(kind))
        {
            throw new ArgumentOutOfRangeException(nameof(kind), kind, "Use CheckpointKind.Full or CheckpointKind.LogOnly.");
        }

        if (!Enum.IsDefined(mode))
        {
            throw new ArgumentOutOfRangeException(nameof(mode), mode,
                "Use CheckpointMode.FoldOver, CheckpointMode.Snapshot or CheckpointMode.Auto.");
        }

        ThrowIfRecoveryRequired();
        return await RequireCheckpoints().TakeAsync(kind, mode, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Restores the store from a checkpoint (CPR §6.4). Call it on a new store, before opening any session. Then
    /// <see cref="ContinueSession"/> tells each session which of its operations survived.
    /// </summary>
    /// <param name="token">The checkpoint to recover, or <see langword="null"/> for the newest one that verifies
    /// completely; newer ones that are torn or corrupt are skipped (and listed in the result).</param>
    /// <param name="progress">Receives the replay's progress.</param>
    /// <param name="cancellationToken">Cancels recovery; the store is then unusable and must be disposed.</param>
    /// <returns>What was recovered, or <see langword="null"/> when there is no checkpoint at all.</returns>
    /// <exception cref="CorruptCheckpointException">Checkpoints exist but none verifies; the message names each file at
    /// fault.</exception>
    /// <exception cref="InvalidOperationException">The store is not new, or has no log device or checkpoint store, or
    /// the checkpoint was written by a store of other types or geometry, or every checkpoint belongs to another log (a
    /// shared checkpoint directory, or a log directory that was moved or deleted); nothing was changed.</exception>
    /// <exception cref="CorruptLogException">A record of the log the recovery replays fails its checksum; the store is
    /// then unusable and must be disposed.</exception>
    public async Task<RecoveryResult?> RecoverAsync(
        Guid? token = null, IProgress<RecoveryProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        if (IsDisposed)
        {
            ThrowHelper.ThrowObjectDisposed(GetType().Name);
        }

        CheckpointStateMachine<TKey, TValue, TInput, TOutput, TContext, TFunctions> checkpoints = RequireCheckpoints();
        if (_sessions.OpenCount != 0)
        {
            // Recovery replaces the index and the log under them: a session reading them now could read freed memory.
            throw new InvalidOperationException(
                $"Recover before opening sessions: {_sessions.OpenCount} session(s) of this store are open. Dispose " +
                "them, or recover in a new store and open the sessions afterwards (ContinueSession resumes them).");
        }

        if (_engine.Log.TailAddress != LogAddress.FirstValid || Volatile.Read(ref _periodicStarted) != 0 ||
            checkpoints.HasTakenAny || Interlocked.Exchange(ref _recovered, 1) != 0)
        {
            throw new InvalidOperationException(
                "Recover a new store, before opening sessions, writing or checkpointing anything, and only once.");
        }

        var clock = System.Diagnostics.Stopwatch.StartNew();
        var recovery = new CheckpointRecovery<TKey, TValue, TInput, TOutput, TContext, TFunctions>(
            _engine, _catalog!, _engine.Log.Device!, _identity, _logger);
        CheckpointRecovery<TKey, TValue, TInput, TOutput, TContext, TFunctions>.Choice? choice;
        try
        {
            choice = await recovery.ChooseAsync(token, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            // Nothing changed: the store may be recovered again (say, after the caller fixed a setting elsewhere).
            Volatile.Write(ref _recovered, 0);
            throw;
        }

        if (choice is null)
        {
            if (_recoveryRequired is not null)
            {
                // The device holds a log of which no checkpoint was committed: nothing in it was durable.
                await StoreOpening.EraseUncommittedAsync(_engine.Log.Device!, _identity, _logger, cancellationToken)
                    .ConfigureAwait(false);
            }

            _recoveryRequired = null;
            StartBackgroundWork();
            return null;
        }

        long records = await recovery.ApplyAsync(choice, progress, cancellationToken).ConfigureAwait(false);
        CheckpointMetadata metadata = choice.Metadata;
        _sessions.Restore(metadata.Sessions);
        checkpoints.OnRecovered(metadata.Index);
        _recoveryRequired = null;
        StartBackgroundWork();
        var result = new RecoveryResult(choice.Manifest.Token, metadata.Version, metadata.Kind, metadata.Mode,
            metadata.BeginAddress, metadata.FinalAddress, records, _sessions.CommittedPoints, choice.Skipped,
            clock.Elapsed);
        Diagnostics.CheckpointLog.Recovered(_logger, result.Token, result.Version, result.BeginAddress,
            result.TailAddress, records, metadata.Sessions.Count, clock.Elapsed.TotalMilliseconds);
        return result;
    }

    /// <summary>Whether the store found an existing store on its device or checkpoint store that
    /// <see cref="RecoverAsync"/> has not recovered yet: until it has, the store cannot be used.</summary>
    public bool IsRecoveryRequired => _recoveryRequired is not null;

    private void ThrowIfRecoveryRequired()
    {
        if (_recoveryRequired is { } reason)
        {
            throw new InvalidOperationException(
                $"This store opened existing data ({reason}) and must be recovered before it is used: call " +
                $"RecoverAsync() first. To delete that data and start empty instead, set " +
                $"{nameof(StoreSettings)}.{nameof(StoreSettings.ExistingData)} = {nameof(ExistingDataPolicy)}." +
                $"{nameof(ExistingDataPolicy.Delete)}. Nothing was changed.");
        }
    }

    /// <summary>What a store needs to take checkpoints, for messages.</summary>
    internal const string CheckpointRequirement =
        "log device (StoreSettings.LogDirectory or LogDevice) and checkpoint store (StoreSettings.LogDirectory, " +
        "CheckpointDirectory or CheckpointStore) to write checkpoints to.";

    /// <summary>Whether the store takes checkpoints, so that commits can complete.</summary>
    internal bool CanCommit => _checkpoints is not null;

    private CheckpointStateMachine<TKey, TValue, TInput, TOutput, TContext, TFunctions> RequireCheckpoints() =>
        _checkpoints ?? throw new InvalidOperationException($"This store takes no checkpoints: it needs a {CheckpointRequirement}");

    /// <summary>
    /// Starts background work once the store is in use (a session opened, or recovery done): keeping live records in
    /// memory, which must not copy records while recovery rebuilds the log, and periodic checkpoints.
    /// </summary>
    private void StartBackgroundWork()
    {
        // Index growth reads records to split chains, under epoch protection: not while recovery replays the log.
        _engine.Growth.EnableAutomatic();
        if (Settings.MemoryCompactionMaxLiveFraction > 0 && _engine.Log.HasDevice && _memoryCompactor is null)
        {
            lock (_backgroundGate)
            {
                _memoryCompactor ??= new Compaction.MemoryCompactor(_engine.Log, _engine.CompactionEntry,
                    _engine, Settings.MemoryCompactionMaxLiveFraction, _logger);
            }
        }

        if (_logCompaction is not null && Settings.LogCompactionRatio > 0 &&
            Interlocked.Exchange(ref _logCompactionStarted, 1) == 0)
        {
            _logCompaction.StartAutomatic(Settings.LogCompactionRatio,
                Settings.LogCompactionMinBytesOrDefault(_engine.Log.Device!.SegmentSize),
                Settings.LogSizeLimitRatio, Settings.LogSizeLimitMaxWait);
        }

        StartPeriodicCheckpoints();
    }

    /// <summary>
    /// Starts periodic checkpoints: only once the store is in use, because a checkpoint of the empty store taken before
    /// <see cref="RecoverAsync"/> would become the newest one and hide the real state.
    /// </summary>
    private void StartPeriodicCheckpoints()
    {
        if (Settings.CheckpointInterval is { } interval && _checkpoints is not null &&
            Interlocked.Exchange(ref _periodicStarted, 1) == 0)
        {
            _periodicCheckpoints = RunPeriodicCheckpointsAsync(interval, _stopping.Token);
        }
    }

    private async Task RunPeriodicCheckpointsAsync(TimeSpan interval, CancellationToken stopping)
    {
        using var timer = new PeriodicTimer(interval);
        int taken = 0;
        try
        {
            while (await timer.WaitForNextTickAsync(stopping).ConfigureAwait(false))
            {
                if (!HasUncommittedOperations)
                {
                    // An idle store: a checkpoint would commit what the last one did (a snapshot would copy the whole
                    // mutable region again for nothing).
                    Interlocked.Increment(ref _periodicTicksSkipped);
                    continue;
                }

                CheckpointKind kind = taken % Settings.IndexCheckpointEvery == 0
                    ? CheckpointKind.Full
                    : CheckpointKind.LogOnly;
                try
                {
                    await _checkpoints!.TakeAsync(kind, Settings.PeriodicCheckpointMode, stopping).ConfigureAwait(false);
                    taken++;
                }
                catch (Exception error) when (error is not OperationCanceledException)
                {
                    Diagnostics.CheckpointLog.PeriodicFailed(_logger, error);
                }
            }
        }
        catch (OperationCanceledException) when (stopping.IsCancellationRequested)
        {
        }
    }

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

        // Stop checkpoints first: a running one still drives sessions through its phases and reads the log.
        _stopping.Cancel();
        _memoryCompactor?.Dispose();
        _logCompaction?.Dispose();
        _engine.Growth.Stop();
        _periodicCheckpoints.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
        _checkpoints?.WaitUntilIdle();

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
        _checkpoints?.Dispose();
        _engine.Dispose();
        _ownedDevice?.Dispose();
        _ownedCheckpointStore?.Dispose();
        _stopping.Dispose();
    }
}
