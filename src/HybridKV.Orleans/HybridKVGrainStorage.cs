using System.Buffers;
using System.Diagnostics.Metrics;
using System.Text;
using HybridKV.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Orleans;
using Orleans.Runtime;
using Orleans.Storage;
using GrainStateSession = HybridKV.Sessions.Session<HybridKV.VarBytes, HybridKV.VarBytes, HybridKV.VarBytes,
    HybridKV.VarBytesOutput, HybridKV.Empty, HybridKV.VarBytesFunctions>;
using GrainStateStore = HybridKV.HybridKVStore<HybridKV.VarBytes, HybridKV.VarBytes, HybridKV.VarBytes,
    HybridKV.VarBytesOutput, HybridKV.Empty, HybridKV.VarBytesFunctions>;

namespace HybridKV.Orleans;

/// <summary>
/// Grain storage on a HybridKV store of this silo: one record per grain state, keyed by state name and grain id, holding
/// a version (the ETag), an exists flag and the state as the grain storage serializer writes it. A write checks the
/// ETag and writes under one lock per key (nothing else writes this store: its directory is locked to this silo), and
/// is acknowledged only once a checkpoint holds it (commit on demand, shared by the writes arriving together).
/// </summary>
internal sealed class HybridKVGrainStorage : IGrainStorage, ILifecycleParticipant<ISiloLifecycle>, IDisposable
{
    // Writes of one key are serialized by one of these (chosen by the key's hash): the read of the current version and
    // the write after it are then atomic. Waiting writes of different keys rarely share one.
    private const int LockStripes = 64;

    private readonly string _name;
    private readonly HybridKVGrainStorageOptions _options;
    private readonly HybridKVSessionPool<GrainStateStore, GrainStateSession> _pool = new();
    private readonly HybridKVStoreHost<GrainStateStore, GrainStateSession> _host;
    private readonly SemaphoreSlim[] _stripes = Enumerable.Range(0, LockStripes).Select(_ => new SemaphoreSlim(1, 1)).ToArray();

    public HybridKVGrainStorage(string name, HybridKVGrainStorageOptions options, HybridKVOptions storeOptions,
        ILoggerFactory loggerFactory, IMeterFactory meterFactory, TimeProvider time)
    {
        _name = name;
        _options = options;
        _host = new HybridKVStoreHost<GrainStateStore, GrainStateSession>(
            storeOptions, $"grain storage '{name}'", _pool, loggerFactory, meterFactory, time);
    }

    /// <summary>The store's host: its pool, scheduler and state (tests and the health of the provider).</summary>
    internal HybridKVStoreHost<GrainStateStore, GrainStateSession> Host => _host;

    /// <summary>Opens and recovers the store before grains run; stops it (final checkpoint) after they are gone.</summary>
    public void Participate(ISiloLifecycle lifecycle) =>
        lifecycle.Subscribe(OptionFormattingUtilities.Name<HybridKVGrainStorage>(_name),
            ServiceLifecycleStage.ApplicationServices, _host.StartingAsync, _host.StopAsync);

    /// <inheritdoc/>
    public async Task ReadStateAsync<T>(string stateName, GrainId grainId, IGrainState<T> grainState)
    {
        ArgumentNullException.ThrowIfNull(grainState);
        byte[] key = KeyOf(stateName, grainId);
        (long version, bool exists, BinaryData? state) = await _pool.RunAsync(
            (session, token) => ReadAsync(session, key, withState: true, token)).ConfigureAwait(false);
        grainState.ETag = version == 0 ? null : GrainStateRecord.ETagOf(version);
        grainState.RecordExists = exists;
        if (exists)
        {
            grainState.State = _options.GrainStorageSerializer.Deserialize<T>(state!);
        }
    }

    /// <inheritdoc/>
    public async Task WriteStateAsync<T>(string stateName, GrainId grainId, IGrainState<T> grainState)
    {
        ArgumentNullException.ThrowIfNull(grainState);
        BinaryData state = _options.GrainStorageSerializer.Serialize(grainState.State);
        long version = await ReplaceAsync(stateName, grainId, grainState.ETag, state.ToMemory(), exists: true)
            .ConfigureAwait(false);
        grainState.ETag = GrainStateRecord.ETagOf(version);
        grainState.RecordExists = true;
    }

    /// <inheritdoc/>
    public async Task ClearStateAsync<T>(string stateName, GrainId grainId, IGrainState<T> grainState)
    {
        ArgumentNullException.ThrowIfNull(grainState);
        long version = await ReplaceAsync(stateName, grainId, grainState.ETag, ReadOnlyMemory<byte>.Empty, exists: false)
            .ConfigureAwait(false);
        grainState.ETag = GrainStateRecord.ETagOf(version);
        grainState.RecordExists = false;
    }

    /// <summary>
    /// Writes the next version of a grain's state if the stored one is still <paramref name="expectedETag"/>, and
    /// returns once it is durable.
    /// </summary>
    /// <returns>The version written.</returns>
    /// <exception cref="InconsistentStateException">The stored version is not <paramref name="expectedETag"/>:
    /// another activation wrote since this one read. Nothing was written.</exception>
    private Task<long> ReplaceAsync(
        string stateName, GrainId grainId, string? expectedETag, ReadOnlyMemory<byte> state, bool exists)
    {
        byte[] key = KeyOf(stateName, grainId);
        SemaphoreSlim stripe = _stripes[(int)((uint)KeyHashing.HashSpan(key) % LockStripes)];
        return _pool.RunDurableAsync(async (session, token) =>
        {
            await stripe.WaitAsync(token).ConfigureAwait(false);
            try
            {
                (long stored, _, _) = await ReadAsync(session, key, withState: false, token).ConfigureAwait(false);
                string? storedETag = stored == 0 ? null : GrainStateRecord.ETagOf(stored);
                if (!string.Equals(storedETag, expectedETag, StringComparison.Ordinal))
                {
                    throw new InconsistentStateException(
                        $"Grain storage '{_name}' refused to write state '{stateName}' of grain {grainId}: the write " +
                        $"expected ETag '{expectedETag ?? "none"}' but the stored state has ETag " +
                        $"'{storedETag ?? "none"}' (another activation wrote it). Nothing was written.",
                        storedETag ?? "none", expectedETag ?? "none");
                }

                long version = stored + 1;
                byte[] record = GrainStateRecord.Create(version, state.Span, exists);
                await session.UpsertAsync(key, record, token).ConfigureAwait(false);
                return version;
            }
            finally
            {
                stripe.Release();
            }
        });
    }

    /// <summary>The stored version (0 when there is no record), whether the state exists, and the state's bytes.</summary>
    private static async ValueTask<(long Version, bool Exists, BinaryData? State)> ReadAsync(
        GrainStateSession session, byte[] key, bool withState, CancellationToken cancellationToken)
    {
        ReadResult<IMemoryOwner<byte>?> read = await session.ReadAsync(key, cancellationToken).ConfigureAwait(false);
        if (read.Status != Status.Ok || read.Output is null)
        {
            return (0, false, null);
        }

        using IMemoryOwner<byte> record = read.Output;
        (long version, bool exists) = GrainStateRecord.ReadHeader(record.Memory.Span);
        BinaryData? state = withState && exists
            ? new BinaryData(record.Memory[GrainStateRecord.HeaderSize..].ToArray())
            : null;
        return (version, exists, state);
    }

    /// <summary>Closes the store if the silo did not stop it (say, it failed to start).</summary>
    public void Dispose()
    {
        _host.Dispose();
        foreach (SemaphoreSlim stripe in _stripes)
        {
            stripe.Dispose();
        }
    }

    /// <summary>The store's key of a grain's state: the state name and the grain id, in UTF-8.</summary>
    internal static byte[] KeyOf(string stateName, GrainId grainId) =>
        Encoding.UTF8.GetBytes($"{stateName}\u001f{grainId}");
}
