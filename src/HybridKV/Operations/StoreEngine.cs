using HybridKV.Devices;
using HybridKV.Epochs;
using HybridKV.Index;
using HybridKV.Log;
using Microsoft.Extensions.Logging;

namespace HybridKV.Operations;

/// <summary>
/// The operations of FASTER appendix G over one index and one HybridLog, generic over the user's functions struct so
/// that every callback is bound statically. One file per operation; the steps they share (trace back, append a record,
/// link it) are in <c>StoreEngine.Records.cs</c>.
/// </summary>
internal sealed partial class StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> : IDisposable
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreSettings _settings;

    // Not readonly: a readonly struct field would be copied before every callback call.
    private TFunctions _functions;

    // The CPR version stamped into new records (CPR §6); 1 until checkpoints exist.
    private readonly long _version = 1;

    public StoreEngine(StoreSettings settings, TFunctions functions, StorageDevice? device, ILogger logger)
    {
        _settings = settings;
        _functions = functions;
        Epoch = new LightEpoch(settings.MaxSessions);
        Index = new HashIndex(settings.IndexBuckets);
        Log = new HybridLog(Epoch, settings.PageSizeBits, settings.BufferPages, settings.MutablePages, device, logger);
    }

    public LightEpoch Epoch { get; }

    public HashIndex Index { get; }

    public HybridLog Log { get; }

    /// <summary>The size of every record of this store in the log.</summary>
    public static int RecordSize => LogRecord<TKey, TValue>.Size;

    public void Dispose()
    {
        // No session is protected any more, so every waiting trigger action can run now: those that start flushes must
        // run before the log waits for its flushes and frees the frames they write from.
        Epoch.TryDrain();
        Log.Dispose();
        Index.Dispose();
        Epoch.Dispose();
    }
}
