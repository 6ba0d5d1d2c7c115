using HybridKV.Checkpoints;
using HybridKV.Devices;

namespace HybridKV.Extensions.Hosting;

/// <summary>
/// A log device and a checkpoint store opened by an <see cref="IHybridKVStorageProvider"/> for one hosted store. The
/// host hands both to the store (<see cref="StoreSettings.LogDevice"/>, <see cref="StoreSettings.CheckpointStore"/>),
/// which does not own them, and disposes them here after the store, once.
/// </summary>
public sealed class HybridKVStorage : IAsyncDisposable
{
    private readonly Func<ValueTask> _disposeAsync;
    private int _disposed;

    /// <summary>Wraps an opened device and checkpoint store.</summary>
    /// <param name="logDevice">The device of the store's log.</param>
    /// <param name="checkpointStore">Where the store's checkpoints go.</param>
    /// <param name="disposeAsync">Releases both (and whatever else the provider opened); called once.</param>
    public HybridKVStorage(StorageDevice logDevice, CheckpointStore checkpointStore, Func<ValueTask> disposeAsync)
    {
        ArgumentNullException.ThrowIfNull(logDevice);
        ArgumentNullException.ThrowIfNull(checkpointStore);
        ArgumentNullException.ThrowIfNull(disposeAsync);
        LogDevice = logDevice;
        CheckpointStore = checkpointStore;
        _disposeAsync = disposeAsync;
    }

    /// <summary>The device of the store's log.</summary>
    public StorageDevice LogDevice { get; }

    /// <summary>Where the store's checkpoints go.</summary>
    public CheckpointStore CheckpointStore { get; }

    /// <summary>Releases the device and the checkpoint store; later calls do nothing.</summary>
    public ValueTask DisposeAsync() =>
        Interlocked.Exchange(ref _disposed, 1) == 0 ? _disposeAsync() : ValueTask.CompletedTask;
}
