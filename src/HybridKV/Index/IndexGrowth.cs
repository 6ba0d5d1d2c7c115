using HybridKV.Diagnostics;
using HybridKV.Epochs;
using Microsoft.Extensions.Logging;

namespace HybridKV.Index;

/// <summary>
/// What the index needs to double while the store runs (FASTER appendix B), and the background task that doubles it
/// when its overflow buckets pass <see cref="StoreSettings.IndexGrowthOverflowPercent"/> of its primary buckets.
/// </summary>
internal sealed class IndexGrowth : IDisposable
{
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stopping = new();
    private readonly object _gate = new();
    private Task _running = Task.CompletedTask;
    private int _isRunning;
    private volatile bool _automatic;
    private int _disposed;

    /// <param name="epoch">The store's epoch framework.</param>
    /// <param name="epochEntry">An epoch row of the growth's own, protected while it splits chunks.</param>
    /// <param name="records">Reads the keys of in-memory records, to divide chains.</param>
    /// <param name="maxBuckets">The index never grows past this many buckets.</param>
    /// <param name="overflowPercent">Grow when overflow buckets exceed this percentage of buckets; 0: never on its own.</param>
    /// <param name="logger">Where resizes are reported.</param>
    public IndexGrowth(LightEpoch epoch, int epochEntry, IChainReader records, long maxBuckets, int overflowPercent,
        ILogger logger)
    {
        Epoch = epoch;
        EpochEntry = epochEntry;
        Records = records;
        MaxBuckets = maxBuckets;
        OverflowPercent = overflowPercent;
        _logger = logger;
    }

    public LightEpoch Epoch { get; }

    public int EpochEntry { get; }

    public IChainReader Records { get; }

    public long MaxBuckets { get; }

    public int OverflowPercent { get; }

    /// <summary>The index this grows; recovery replaces it.</summary>
    public HashIndex? Index { get; set; }

    /// <summary>
    /// A test hook: awaited by a resize right after it enters prepare-to-resize (before the epoch bump that ends it)
    /// and right after it enters resizing (before the background task splits any chunk), outside epoch protection.
    /// </summary>
    internal Func<ResizePhase, Task>? PhaseGate { get; set; }

    /// <summary>The report of the last completed resize, if any.</summary>
    public ResizeReport? LastReport { get; private set; }

    /// <summary>The longest any operation could have stalled on any resize so far (<see cref="ResizeReport.LongestStall"/>).</summary>
    public TimeSpan LongestStall { get; private set; }

    /// <summary>Resizes completed so far.</summary>
    public int Completed { get; private set; }

    /// <summary>The background resize task, or a completed task (tests wait for automatic growth with it).</summary>
    internal Task Running
    {
        get
        {
            lock (_gate)
            {
                return _running;
            }
        }
    }

    /// <summary>Whether a resize is requested or running in the background.</summary>
    public bool IsBusy => Volatile.Read(ref _isRunning) != 0;

    /// <summary>Lets the overflow threshold start resizes: only once the store is in use (not while recovery replays
    /// the log, whose inserts run outside epoch protection).</summary>
    public void EnableAutomatic() => _automatic = true;

    /// <summary>Whether an index of <paramref name="bucketCount"/> buckets with <paramref name="overflowLinked"/>
    /// overflow buckets should double.</summary>
    public bool ShouldGrow(long overflowLinked, long bucketCount) =>
        OverflowPercent > 0 && bucketCount < MaxBuckets && overflowLinked * 100 > bucketCount * OverflowPercent;

    /// <summary>Starts the background resize unless one is running. Cheap; called by the insert that linked an overflow
    /// bucket past the threshold.</summary>
    public void Request()
    {
        if (!_automatic || Interlocked.CompareExchange(ref _isRunning, 1, 0) != 0)
        {
            return;
        }

        lock (_gate)
        {
            if (_stopping.IsCancellationRequested)
            {
                Volatile.Write(ref _isRunning, 0);
                return;
            }

            _running = Task.Run(RunAsync);
        }
    }

    private async Task RunAsync()
    {
        try
        {
            // Keeps doubling while the threshold is still passed: a burst of inserts may need several doublings.
            while (Index is { } index && index.ShouldGrow() && !_stopping.IsCancellationRequested)
            {
                if (!await index.GrowAsync(_stopping.Token).ConfigureAwait(false))
                {
                    break;
                }
            }
        }
        catch (OperationCanceledException) when (_stopping.IsCancellationRequested)
        {
        }
#pragma warning disable CA1031 // A background task: the failure is logged and the index stays as it was.
        catch (Exception error)
#pragma warning restore CA1031
        {
            IndexLog.GrowthFailed(_logger, error);
        }
        finally
        {
            Volatile.Write(ref _isRunning, 0);
        }
    }

    /// <summary>Called by the index when a resize completed.</summary>
    internal void OnResized(ResizeReport report)
    {
        LastReport = report;
        Completed++;
        if (report.LongestStall > LongestStall)
        {
            LongestStall = report.LongestStall;
        }

        IndexLog.Resized(_logger, report.OldBuckets, report.NewBuckets, report.PrepareStall.TotalMilliseconds,
            report.LongestSplitStall.TotalMilliseconds, report.SplitByOperations, report.Chunks,
            report.Duration.TotalMilliseconds);
    }

    /// <summary>Stops starting resizes and waits for a running one (a started resize runs to its end: it is finite
    /// work, and an index left half split would serve no operation).</summary>
    public void Stop()
    {
        Task running;
        lock (_gate)
        {
            if (!_stopping.IsCancellationRequested)
            {
                _stopping.Cancel();
            }

            running = _running;
        }

        running.ContinueWith(static _ => { }, TaskScheduler.Default).Wait();
    }

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            Stop();
            _stopping.Dispose();
        }
    }
}

/// <summary>What one doubling of the index did and how long operations could stall on it.</summary>
/// <param name="OldBuckets">Buckets before.</param>
/// <param name="NewBuckets">Buckets after.</param>
/// <param name="PrepareStall">How long prepare-to-resize lasted: the longest an operation that had to swing an index
/// entry then waited.</param>
/// <param name="LongestSplitStall">The longest a single chunk split took: the longest an operation that found its
/// chunk unsplit (or being split) waited.</param>
/// <param name="SplitByOperations">Chunks split by operations rather than by the background task.</param>
/// <param name="Chunks">Chunks of the old table.</param>
/// <param name="Duration">The whole resize, from allocating the new table to freeing the old one.</param>
internal sealed record ResizeReport(long OldBuckets, long NewBuckets, TimeSpan PrepareStall, TimeSpan LongestSplitStall,
    int SplitByOperations, int Chunks, TimeSpan Duration)
{
    /// <summary>The longest any operation could have stalled because of this resize.</summary>
    public TimeSpan LongestStall => PrepareStall > LongestSplitStall ? PrepareStall : LongestSplitStall;
}
